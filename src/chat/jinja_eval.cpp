// Expression evaluation with Python's operator semantics, which is what jinja2 uses: `/` always
// gives a float, `//` and `%` round toward negative infinity, `+` joins strings and lists but
// never a string and a number, `~` joins anything as text, `and`/`or` return an operand, and
// comparisons chain (a < b < c). Integer overflow is an error rather than Python's big integers.
#include <algorithm>
#include <cmath>
#include <limits>

#include "chat/jinja_interp.hpp"

namespace pagedserve::jinja {
namespace {

bool int_like(const value& v, std::int64_t& out) {
  if (const auto* i = v.get<std::int64_t>()) return (out = *i, true);
  if (const auto* b = v.get<bool>()) return (out = *b, true);
  return false;
}

double to_double(const value& v) {
  std::int64_t i = 0;
  return int_like(v, i) ? static_cast<double>(i) : *v.get<double>();
}

std::string_view op_symbol(binary_op op) {
  static constexpr std::string_view names[] = {"+", "-", "*", "/", "//", "%", "**", "~", "and", "or"};
  return names[static_cast<int>(op)];
}

std::unexpected<std::string> operand_error(binary_op op, const value& a, const value& b) {
  return fail("unsupported operand type(s) for " + std::string(op_symbol(op)) + ": '" + std::string(type_name(a)) +
              "' and '" + std::string(type_name(b)) + "'");
}

result<value> int_arith(binary_op op, std::int64_t a, std::int64_t b) {
  std::int64_t r = 0;
  switch (op) {
    case binary_op::add:
      if (__builtin_add_overflow(a, b, &r)) return fail("integer overflow");
      return r;
    case binary_op::sub:
      if (__builtin_sub_overflow(a, b, &r)) return fail("integer overflow");
      return r;
    case binary_op::mul:
      if (__builtin_mul_overflow(a, b, &r)) return fail("integer overflow");
      return r;
    case binary_op::div:
      if (b == 0) return fail("division by zero");
      return static_cast<double>(a) / static_cast<double>(b);
    case binary_op::floordiv:
    case binary_op::mod: {
      if (b == 0) return fail("integer division or modulo by zero");
      if (a == std::numeric_limits<std::int64_t>::min() && b == -1) return fail("integer overflow");
      std::int64_t q = a / b, m = a % b;
      if (m != 0 && ((m < 0) != (b < 0))) --q, m += b;
      return op == binary_op::floordiv ? q : m;
    }
    case binary_op::pow: {
      if (b < 0) return std::pow(static_cast<double>(a), static_cast<double>(b));
      r = 1;
      for (std::int64_t base = a; b > 0; b >>= 1) {
        if ((b & 1) && __builtin_mul_overflow(r, base, &r)) return fail("integer overflow");
        if (b > 1 && __builtin_mul_overflow(base, base, &base)) return fail("integer overflow");
      }
      return r;
    }
    default:
      return fail("bad integer operator");
  }
}

result<value> float_arith(binary_op op, double a, double b) {
  switch (op) {
    case binary_op::add:
      return a + b;
    case binary_op::sub:
      return a - b;
    case binary_op::mul:
      return a * b;
    case binary_op::div:
      if (b == 0) return fail("float division by zero");
      return a / b;
    case binary_op::floordiv:
    case binary_op::mod: {
      if (b == 0) return fail("float modulo");
      double m = std::fmod(a, b);
      if (m != 0 && ((m < 0) != (b < 0))) m += b;
      return op == binary_op::mod ? m : std::floor((a - m) / b + 0.5);
    }
    case binary_op::pow:
      return std::pow(a, b);
    default:
      return fail("bad float operator");
  }
}

// s * n or list * n.
template <class Seq>
result<value> repeat(interpreter& in, const Seq& s, std::int64_t n) {
  if (n <= 0 || s.empty()) return value(Seq{});
  if (static_cast<std::uint64_t>(n) > std::numeric_limits<std::size_t>::max() / s.size())
    return fail("result too large");
  JINJA_CHECK(in.check_size(s.size() * static_cast<std::size_t>(n)));
  Seq out;
  out.reserve(s.size() * static_cast<std::size_t>(n));
  for (std::int64_t k = 0; k < n; ++k) out.insert(out.end(), s.begin(), s.end());
  return value(std::move(out));
}

result<value> arith(interpreter& in, binary_op op, const value& a, const value& b) {
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  std::int64_t ia = 0, ib = 0;
  if (a.is_number() && b.is_number()) {
    if (int_like(a, ia) && int_like(b, ib)) return int_arith(op, ia, ib);
    return float_arith(op, to_double(a), to_double(b));
  }
  if (op == binary_op::add) {
    if (a.is_string() && b.is_string()) {
      const std::string &x = *a.get<std::string>(), &y = *b.get<std::string>();
      JINJA_CHECK(in.check_size(x.size() + y.size()));
      return x + y;
    }
    if (a.as_list() && b.as_list()) {
      JINJA_CHECK(in.check_size(a.as_list()->size() + b.as_list()->size()));
      list out = *a.as_list();
      out.insert(out.end(), b.as_list()->begin(), b.as_list()->end());
      return out;
    }
  }
  if (op == binary_op::mul) {
    const bool a_int = int_like(a, ia), b_int = int_like(b, ib);
    const value& seq = a_int ? b : a;
    const std::int64_t n = a_int ? ia : ib;
    if (a_int != b_int) {
      if (seq.is_string()) return repeat(in, *seq.get<std::string>(), n);
      if (seq.as_list()) return repeat(in, *seq.as_list(), n);
    }
  }
  return operand_error(op, a, b);
}

result<bool> contains(const value& container, const value& item) {
  if (container.is_undefined()) return false;
  if (const auto* s = container.get<std::string>()) {
    if (!item.is_string())
      return fail("'in <string>' requires string as left operand, not " + std::string(type_name(item)));
    return s->find(*item.get<std::string>()) != std::string::npos;
  }
  if (const list* l = container.as_list()) {
    for (const value& v : *l)
      if (equals(v, item)) return true;
    return false;
  }
  if (const dict* d = container.as_dict()) return item.is_string() && d->find(*item.get<std::string>()) != nullptr;
  return fail("argument of type '" + std::string(type_name(container)) + "' is not iterable");
}

result<bool> compare(compare_op op, const value& a, const value& b) {
  switch (op) {
    case compare_op::eq:
      return equals(a, b);
    case compare_op::ne:
      return !equals(a, b);
    case compare_op::in:
      return contains(b, a);
    case compare_op::not_in: {
      JINJA_TRY(const bool in, contains(b, a));
      return !in;
    }
    default:
      break;
  }
  if (a.is_undefined()) return undefined_error(a);
  if (b.is_undefined()) return undefined_error(b);
  if (op == compare_op::lt) return less(a, b);
  if (op == compare_op::gt) return less(b, a);
  JINJA_TRY(const bool strict, less(op == compare_op::le ? a : b, op == compare_op::le ? b : a));
  return strict || equals(a, b);
}

// Python slice bounds for a sequence of n items.
result<std::vector<std::size_t>> slice_indices(std::int64_t n, const value& start, const value& stop,
                                               const value& step_v) {
  auto bound = [](const value& v, std::int64_t& out) -> result<bool> {
    if (v.is_undefined() || v.is_none()) return false;
    if (!int_like(v, out)) return fail("slice indices must be integers or None");
    return true;
  };
  std::int64_t step = 1, lo = 0, hi = 0;
  JINJA_TRY(const bool has_step, bound(step_v, step));
  if (has_step && step == 0) return fail("slice step cannot be zero");
  JINJA_TRY(const bool has_lo, bound(start, lo));
  JINJA_TRY(const bool has_hi, bound(stop, hi));
  auto clamp = [&](std::int64_t v) {
    if (v < 0) v += n;
    return step > 0 ? std::clamp<std::int64_t>(v, 0, n) : std::clamp<std::int64_t>(v, -1, n - 1);
  };
  lo = has_lo ? clamp(lo) : (step > 0 ? 0 : n - 1);
  hi = has_hi ? clamp(hi) : (step > 0 ? n : -1);
  std::vector<std::size_t> idx;
  for (std::int64_t i = lo; step > 0 ? i < hi : i > hi; i += step) idx.push_back(static_cast<std::size_t>(i));
  return idx;
}

}  // namespace

result<value> interpreter::eval(const expr& e) {
  auto r = [&]() -> result<value> {
    JINJA_CHECK(enter());
    auto out = std::visit([&](const auto& n) { return eval_node(n); }, e.node);
    leave();
    return out;
  }();
  if (!r && !located_) {
    located_ = true;
    r.error() = "line " + std::to_string(e.line) + ": " + r.error();
  }
  return r;
}

result<call_args> interpreter::eval_args(const arg_exprs& a) {
  call_args out;
  for (const auto& p : a.positional) {
    JINJA_TRY(value v, eval(*p));
    out.positional.push_back(std::move(v));
  }
  for (const auto& [name, p] : a.keyword) {
    JINJA_TRY(value v, eval(*p));
    out.keyword.emplace_back(name, std::move(v));
  }
  return out;
}

result<value> interpreter::eval_node(const literal_expr& e) { return e.v; }
result<value> interpreter::eval_node(const name_expr& e) { return lookup(e.name); }

result<value> interpreter::eval_node(const list_expr& e) {
  list out;
  out.is_tuple = e.is_tuple;
  for (const auto& item : e.items) {
    JINJA_TRY(value v, eval(*item));
    out.push_back(std::move(v));
  }
  return out;
}

result<value> interpreter::eval_node(const dict_expr& e) {
  dict out;
  for (const auto& [k, v] : e.items) {
    JINJA_TRY(const value key, eval(*k));
    if (!key.is_string()) return fail("dict keys must be strings, not " + std::string(type_name(key)));
    JINJA_TRY(value val, eval(*v));
    out.set(*key.get<std::string>(), std::move(val));
  }
  return out;
}

result<value> interpreter::eval_node(const attr_expr& e) {
  JINJA_TRY(const value obj, eval(*e.object));
  return attr_get(obj, e.name);
}

result<value> interpreter::eval_node(const item_expr& e) {
  JINJA_TRY(const value obj, eval(*e.object));
  JINJA_TRY(const value key, eval(*e.index));
  return item_get(obj, key);
}

result<value> interpreter::eval_node(const slice_expr& e) {
  JINJA_TRY(const value obj, eval(*e.object));
  value parts[3];
  const expr* exprs[3] = {e.start.get(), e.stop.get(), e.step.get()};
  for (int k = 0; k < 3; ++k) {
    if (exprs[k]) {
      JINJA_TRY(parts[k], eval(*exprs[k]));
    }
  }
  if (obj.is_undefined()) return undefined_error(obj);
  if (const list* l = obj.as_list(); l && !l->is_generator) {
    JINJA_TRY(const auto idx, slice_indices(static_cast<std::int64_t>(l->size()), parts[0], parts[1], parts[2]));
    list out;
    for (std::size_t i : idx) out.push_back((*l)[i]);
    return out;
  }
  if (const auto* s = obj.get<std::string>()) {
    const auto chars = utf8_chars(*s);
    JINJA_TRY(const auto idx, slice_indices(static_cast<std::int64_t>(chars.size()), parts[0], parts[1], parts[2]));
    std::string out;
    for (std::size_t i : idx) out += chars[i];
    return out;
  }
  return fail("'" + std::string(type_name(obj)) + "' object is not subscriptable");
}

result<value> interpreter::eval_node(const unary_expr& e) {
  JINJA_TRY(const value v, eval(*e.operand));
  if (e.op == unary_op::not_) return !truthy(v);
  if (v.is_undefined()) return undefined_error(v);
  std::int64_t i = 0;
  if (int_like(v, i)) {
    if (e.op == unary_op::pos) return i;
    if (i == std::numeric_limits<std::int64_t>::min()) return fail("integer overflow");
    return -i;
  }
  if (const auto* d = v.get<double>()) return e.op == unary_op::neg ? -*d : *d;
  return fail(std::string("bad operand type for unary ") + (e.op == unary_op::neg ? "-" : "+") + ": '" +
              std::string(type_name(v)) + "'");
}

result<value> interpreter::eval_node(const binary_expr& e) {
  JINJA_TRY(value lhs, eval(*e.lhs));
  if (e.op == binary_op::and_ && !truthy(lhs)) return lhs;
  if (e.op == binary_op::or_ && truthy(lhs)) return lhs;
  JINJA_TRY(value rhs, eval(*e.rhs));
  if (e.op == binary_op::and_ || e.op == binary_op::or_) return rhs;
  if (e.op == binary_op::concat) {
    std::string out = to_str(lhs);
    const std::string r = to_str(rhs);
    JINJA_CHECK(check_size(out.size() + r.size()));
    return out + r;
  }
  return arith(*this, e.op, lhs, rhs);
}

result<value> interpreter::eval_node(const compare_expr& e) {
  JINJA_TRY(value left, eval(*e.first));
  for (const auto& [op, rhs] : e.rest) {
    JINJA_TRY(value right, eval(*rhs));
    JINJA_TRY(const bool ok, compare(op, left, right));
    if (!ok) return false;
    left = std::move(right);
  }
  return true;
}

result<value> interpreter::eval_node(const cond_expr& e) {
  JINJA_TRY(const value c, eval(*e.cond));
  if (truthy(c)) return eval(*e.then);
  if (e.otherwise) return eval(*e.otherwise);
  return value(undefined_t{"the inline if expression had no else branch"});
}

result<value> interpreter::eval_node(const filter_expr& e) {
  const filter_fn* f = filter_find(e.name);
  if (!f) return fail("no filter named '" + e.name + "'");
  JINJA_TRY(const value operand, eval(*e.operand));
  JINJA_TRY(call_args args, eval_args(e.args));
  return (*f)(*this, operand, std::move(args));
}

result<value> interpreter::eval_node(const test_expr& e) {
  const test_fn* t = test_find(e.name);
  if (!t) return fail("no test named '" + e.name + "'");
  JINJA_TRY(const value operand, eval(*e.operand));
  JINJA_TRY(call_args args, eval_args(e.args));
  JINJA_TRY(const bool r, (*t)(*this, operand, std::move(args)));
  return r != e.negated;
}

result<value> interpreter::eval_node(const call_expr& e) {
  JINJA_TRY(const value callee, eval(*e.callee));
  JINJA_TRY(call_args args, eval_args(e.args));
  return call(callee, std::move(args));
}

}  // namespace pagedserve::jinja
