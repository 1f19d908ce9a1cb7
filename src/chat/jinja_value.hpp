#pragma once
// The values a chat template computes with, modelled on the Python objects jinja2 sees: none, bool,
// int, float, str, list, dict (insertion-ordered), jinja2's Namespace, callables (builtins, bound
// methods, macros) and Undefined. Lists and dicts are immutable once made (the sandbox forbids
// mutation), so they are shared; only a namespace changes, through `{% set ns.attr = ... %}`.
#include <concepts>
#include <cstdint>
#include <expected>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

// Propagates the error of a std::expected, or binds its value: JINJA_TRY(value v, eval(e));
// It expands to several statements, so under an if it needs braces.
#define JINJA_CONCAT_INNER(a, b) a##b
#define JINJA_CONCAT(a, b) JINJA_CONCAT_INNER(a, b)
#define JINJA_TRY(decl, expr)                                                                                         \
  auto JINJA_CONCAT(jinja_r_, __LINE__) = (expr);                                                                     \
  if (!JINJA_CONCAT(jinja_r_, __LINE__)) return std::unexpected(std::move(JINJA_CONCAT(jinja_r_, __LINE__).error())); \
  decl = std::move(*JINJA_CONCAT(jinja_r_, __LINE__))
// Propagates the error of a std::expected whose value is not needed.
#define JINJA_CHECK(expr)                                               \
  do {                                                                  \
    auto jinja_c_ = (expr);                                             \
    if (!jinja_c_) return std::unexpected(std::move(jinja_c_.error())); \
  } while (0)

namespace pagedserve::jinja {

template <class T>
using result = std::expected<T, std::string>;

inline std::unexpected<std::string> fail(std::string msg) { return std::unexpected(std::move(msg)); }

struct value;
class interpreter;

// jinja2's default Undefined: falsey, prints as "", iterates as empty; most other uses are errors.
struct undefined_t {
  std::string hint;  // what was looked up, for "'x' is undefined"
};
struct none_t {};

struct list;  // defined below value: clang needs value complete to derive from std::vector<value>
using list_ptr = std::shared_ptr<const list>;

// Insertion-ordered string-keyed map (template dicts only ever have string keys here).
struct dict {
  std::vector<std::pair<std::string, value>> items;
  const value* find(std::string_view key) const;
  void set(std::string key, value v);  // replaces an existing key in place, else appends
};
using dict_ptr = std::shared_ptr<const dict>;

// jinja2's namespace(): the one mutable object, so loops can carry state out of their scope.
struct namespace_obj {
  dict attrs;
};
using namespace_ptr = std::shared_ptr<namespace_obj>;

// Arguments of a call as evaluated: positional first, then name=value pairs.
struct call_args {
  std::vector<value> positional;
  std::vector<std::pair<std::string, value>> keyword;
};

// A builtin function, a method bound to its receiver, or a macro.
struct callable {
  std::string name;
  std::function<result<value>(interpreter&, call_args&&)> fn;
};
using callable_ptr = std::shared_ptr<const callable>;

struct value {
  std::variant<undefined_t, none_t, bool, std::int64_t, double, std::string, list_ptr, dict_ptr, namespace_ptr,
               callable_ptr>
      v;

  value() = default;
  value(undefined_t u) : v(std::move(u)) {}
  value(none_t) : v(none_t{}) {}
  value(bool b) : v(b) {}
  template <std::integral T>
  requires(!std::same_as<T, bool>) value(T i) : v(static_cast<std::int64_t>(i)) {}
  value(double d) : v(d) {}
  value(const char* s) : v(std::string(s)) {}
  value(std::string_view s) : v(std::string(s)) {}
  value(std::string s) : v(std::move(s)) {}
  value(list l);
  value(dict d) : v(std::make_shared<const dict>(std::move(d))) {}
  value(namespace_ptr n) : v(std::move(n)) {}
  value(callable_ptr c) : v(std::move(c)) {}

  template <class T>
  const T* get() const {
    return std::get_if<T>(&v);
  }
  bool is_undefined() const { return std::holds_alternative<undefined_t>(v); }
  bool is_none() const { return std::holds_alternative<none_t>(v); }
  bool is_string() const { return std::holds_alternative<std::string>(v); }
  bool is_number() const;  // int, float or bool (a Python bool is an int)
  const list* as_list() const;
  const dict* as_dict() const;
};

// A Python list, a tuple (from "(a, b)", dict.items(), dictsort: prints as (a, b), never equals a
// list), or the items of a generator (what jinja2's map, select, reject, items and reverse filters
// return: always true, no len(), no subscripts; templates consume it with list, join or for).
struct list : std::vector<value> {
  using std::vector<value>::vector;
  bool is_tuple = false;
  bool is_generator = false;
};
inline list generator_of(list items) {
  items.is_generator = true;
  return items;
}

inline value::value(list l) : v(std::make_shared<const list>(std::move(l))) {}

// (a, b), as dict.items() yields.
inline value pair_tuple(value a, value b) {
  list l{std::move(a), std::move(b)};
  l.is_tuple = true;
  return l;
}

// ---- Python semantics (jinja_value.cpp) ----------------------------------------------------------

std::string_view type_name(const value& v);  // Python's type name: "str", "list", "NoneType", ...
bool truthy(const value& v);
bool equals(const value& a, const value& b);
// a < b as Python orders numbers, strings (by code point) and lists; other pairs are an error.
result<bool> less(const value& a, const value& b);
std::string to_str(const value& v);   // str(v); undefined is ""
std::string to_repr(const value& v);  // repr(v), as lists and dicts print their elements
std::string float_repr(double d);     // Python's shortest round-trip repr: 1.0, 1e-05, 1e+16
// json.dumps(v, ensure_ascii=False, indent=indent, separators, sort_keys); indent < 0 means None.
result<std::string> to_json(const value& v, int indent, std::string_view item_sep, std::string_view key_sep,
                            bool sort_keys);
// Items a for loop visits: list elements, dict keys, string characters; undefined is empty.
result<list> iterate(const value& v);
// len(v) for strings (code points), lists and dicts.
result<std::int64_t> length(const value& v);

// ---- Python str on UTF-8 (jinja_strings.cpp) ---------------------------------------------------

std::vector<std::string_view> utf8_chars(std::string_view s);  // one view per code point
bool py_isspace(std::string_view ch);                          // str.isspace() of one character
// str.strip/lstrip/rstrip: chars == nullptr strips whitespace, else any character of *chars.
std::string py_strip(std::string_view s, const std::string* chars, bool left, bool right);
// str.split/rsplit: sep == nullptr splits on whitespace runs; maxsplit < 0 is unlimited.
std::vector<std::string> py_split(std::string_view s, const std::string* sep, std::int64_t maxsplit, bool from_right);
std::string py_replace(std::string_view s, std::string_view old, std::string_view with, std::int64_t count);
std::string py_upper(std::string_view s);
std::string py_lower(std::string_view s);
std::string py_title(std::string_view s);       // str.title()
std::string py_capitalize(std::string_view s);  // str.capitalize()
std::string py_quote(std::string_view s);       // repr(s): quotes and escapes
std::string json_quote(std::string_view s);     // json.dumps(s, ensure_ascii=False)
std::uint32_t char_code_point(std::string_view ch);  // of one utf8_chars() element; a stray byte's value

}  // namespace pagedserve::jinja
