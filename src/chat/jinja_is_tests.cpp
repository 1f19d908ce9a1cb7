// jinja2's builtin tests (`value is [not] name args`), with Python's notion of each type: a bool
// is a number but not an integer, strings and dicts are sequences, and Undefined is iterable.
#include <algorithm>

#include "chat/jinja_interp.hpp"

namespace pagedserve::jinja {
namespace {

result<value> one_arg(call_args&& a, std::string_view test) {
  static constexpr std::string_view p[] = {"other"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 1, test));
  return std::move(args[0]);
}

result<bool> no_args(call_args&& a, std::string_view test) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, test));
  return true;
}

#define JINJA_SIMPLE_TEST(fn, expr)                              \
  result<bool> fn(interpreter&, const value& v, call_args&& a) { \
    JINJA_CHECK(no_args(std::move(a), #fn));                     \
    return (expr);                                               \
  }

JINJA_SIMPLE_TEST(t_defined, !v.is_undefined())
JINJA_SIMPLE_TEST(t_undefined, v.is_undefined())
JINJA_SIMPLE_TEST(t_none, v.is_none())
JINJA_SIMPLE_TEST(t_boolean, v.get<bool>() != nullptr)
JINJA_SIMPLE_TEST(t_true, v.get<bool>() && *v.get<bool>())
JINJA_SIMPLE_TEST(t_false, v.get<bool>() && !*v.get<bool>())
JINJA_SIMPLE_TEST(t_integer, v.get<std::int64_t>() != nullptr)
JINJA_SIMPLE_TEST(t_float, v.get<double>() != nullptr)
JINJA_SIMPLE_TEST(t_number, v.is_number())
JINJA_SIMPLE_TEST(t_string, v.is_string())
JINJA_SIMPLE_TEST(t_mapping, v.as_dict() != nullptr)
JINJA_SIMPLE_TEST(t_iterable, v.is_undefined() || v.is_string() || v.as_list() || v.as_dict())
JINJA_SIMPLE_TEST(t_sequence, v.is_string() || v.as_list() || v.as_dict())
JINJA_SIMPLE_TEST(t_callable, v.get<callable_ptr>() != nullptr)
JINJA_SIMPLE_TEST(t_escaped, false)
JINJA_SIMPLE_TEST(t_lower, v.is_string() && py_lower(*v.get<std::string>()) == *v.get<std::string>() &&
                               py_upper(*v.get<std::string>()) != *v.get<std::string>())
JINJA_SIMPLE_TEST(t_upper, v.is_string() && py_upper(*v.get<std::string>()) == *v.get<std::string>() &&
                               py_lower(*v.get<std::string>()) != *v.get<std::string>())
#undef JINJA_SIMPLE_TEST

result<std::int64_t> int_operand(const value& v, std::string_view test) {
  if (const auto* i = v.get<std::int64_t>()) return *i;
  if (const auto* b = v.get<bool>()) return std::int64_t{*b};
  return fail("'" + std::string(test) + "' test needs an integer, got " + std::string(type_name(v)));
}

result<bool> t_odd(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(no_args(std::move(a), "odd"));
  JINJA_TRY(const std::int64_t i, int_operand(v, "odd"));
  return i % 2 != 0;
}

result<bool> t_even(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(no_args(std::move(a), "even"));
  JINJA_TRY(const std::int64_t i, int_operand(v, "even"));
  return i % 2 == 0;
}

result<bool> t_divisibleby(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value other, one_arg(std::move(a), "divisibleby"));
  JINJA_TRY(const std::int64_t i, int_operand(v, "divisibleby"));
  JINJA_TRY(const std::int64_t d, int_operand(other, "divisibleby"));
  if (d == 0) return fail("integer division or modulo by zero");
  return d == -1 || i % d == 0;
}

result<bool> t_eq(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value other, one_arg(std::move(a), "eq"));
  return equals(v, other);
}

result<bool> t_ne(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value other, one_arg(std::move(a), "ne"));
  return !equals(v, other);
}

result<bool> t_lt(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value other, one_arg(std::move(a), "lt"));
  return less(v, other);
}

result<bool> t_gt(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value other, one_arg(std::move(a), "gt"));
  return less(other, v);
}

result<bool> t_le(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value other, one_arg(std::move(a), "le"));
  JINJA_TRY(const bool lt, less(v, other));
  return lt || equals(v, other);
}

result<bool> t_ge(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value other, one_arg(std::move(a), "ge"));
  JINJA_TRY(const bool gt, less(other, v));
  return gt || equals(v, other);
}

result<bool> t_in(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value seq, one_arg(std::move(a), "in"));
  if (const auto* s = seq.get<std::string>()) {
    if (!v.is_string()) return fail("'in <string>' requires string as left operand");
    return s->find(*v.get<std::string>()) != std::string::npos;
  }
  if (const dict* d = seq.as_dict()) return v.is_string() && d->find(*v.get<std::string>()) != nullptr;
  JINJA_TRY(const list items, iterate(seq));
  return std::any_of(items.begin(), items.end(), [&](const value& x) { return equals(x, v); });
}

// Python `is`: singletons by value, containers by identity, other scalars by value and type.
result<bool> t_sameas(interpreter&, const value& v, call_args&& a) {
  JINJA_TRY(const value other, one_arg(std::move(a), "sameas"));
  if (v.v.index() != other.v.index()) return false;
  if (const auto* l = v.get<list_ptr>()) return *l == *other.get<list_ptr>();
  if (const auto* d = v.get<dict_ptr>()) return *d == *other.get<dict_ptr>();
  return equals(v, other);
}

result<bool> t_filter(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(no_args(std::move(a), "filter"));
  return v.is_string() && filter_find(*v.get<std::string>()) != nullptr;
}

result<bool> t_test(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(no_args(std::move(a), "test"));
  return v.is_string() && test_find(*v.get<std::string>()) != nullptr;
}

struct test_entry {
  std::string_view name;
  test_fn fn;
};

// clang-format off
constexpr test_entry tests[] = {
    {"boolean", t_boolean},   {"callable", t_callable}, {"defined", t_defined},   {"divisibleby", t_divisibleby},
    {"eq", t_eq},             {"equalto", t_eq},        {"==", t_eq},             {"escaped", t_escaped},
    {"even", t_even},         {"false", t_false},       {"filter", t_filter},     {"float", t_float},
    {"ge", t_ge},             {">=", t_ge},             {"gt", t_gt},             {"greaterthan", t_gt},
    {">", t_gt},              {"in", t_in},             {"integer", t_integer},   {"iterable", t_iterable},
    {"le", t_le},             {"<=", t_le},             {"lower", t_lower},       {"lt", t_lt},
    {"lessthan", t_lt},       {"<", t_lt},              {"mapping", t_mapping},   {"ne", t_ne},
    {"!=", t_ne},             {"none", t_none},         {"number", t_number},     {"odd", t_odd},
    {"sameas", t_sameas},     {"sequence", t_sequence}, {"string", t_string},     {"test", t_test},
    {"true", t_true},         {"undefined", t_undefined}, {"upper", t_upper},
};
// clang-format on

}  // namespace

const test_fn* test_find(std::string_view name) {
  for (const auto& t : tests)
    if (t.name == name) return &t.fn;
  return nullptr;
}

}  // namespace pagedserve::jinja
