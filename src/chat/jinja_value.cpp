// Python semantics of template values: truth, equality, ordering, str()/repr(), json.dumps().
// jinja2 delegates all of these to Python, so the rendered text depends on them byte for byte
// (True not true, 1.0 not 1, {'a': 1} with single quotes, ", " and ": " in tojson).
#include "chat/jinja_value.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace pagedserve::jinja {

const value* dict::find(std::string_view key) const {
  for (const auto& [k, v] : items)
    if (k == key) return &v;
  return nullptr;
}

void dict::set(std::string key, value v) {
  for (auto& [k, old] : items)
    if (k == key) {
      old = std::move(v);
      return;
    }
  items.emplace_back(std::move(key), std::move(v));
}

bool value::is_number() const {
  return std::holds_alternative<std::int64_t>(v) || std::holds_alternative<double>(v) ||
         std::holds_alternative<bool>(v);
}

const list* value::as_list() const {
  const auto* p = get<list_ptr>();
  return p ? p->get() : nullptr;
}

const dict* value::as_dict() const {
  const auto* p = get<dict_ptr>();
  return p ? p->get() : nullptr;
}

std::string_view type_name(const value& v) {
  static constexpr std::string_view names[] = {"Undefined", "NoneType", "bool", "int",       "float",
                                               "str",       "list",     "dict", "Namespace", "function"};
  if (const list* l = v.as_list(); l && (l->is_tuple || l->is_generator)) return l->is_tuple ? "tuple" : "generator";
  return names[v.v.index()];
}

bool truthy(const value& v) {
  return std::visit(
      [](const auto& x) -> bool {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, undefined_t> || std::is_same_v<T, none_t>)
          return false;
        else if constexpr (std::is_same_v<T, bool>)
          return x;
        else if constexpr (std::is_same_v<T, std::int64_t> || std::is_same_v<T, double>)
          return x != 0;
        else if constexpr (std::is_same_v<T, std::string>)
          return !x.empty();
        else if constexpr (std::is_same_v<T, list_ptr>)
          return x->is_generator || !x->empty();
        else if constexpr (std::is_same_v<T, dict_ptr>)
          return !x->items.empty();
        else
          return true;
      },
      v.v);
}

namespace {

// Numbers compare across int, float and bool, as in Python.
bool as_number(const value& v, double& d, std::int64_t& i, bool& is_int) {
  if (const auto* b = v.get<bool>()) return (i = *b, is_int = true, true);
  if (const auto* n = v.get<std::int64_t>()) return (i = *n, is_int = true, true);
  if (const auto* f = v.get<double>()) return (d = *f, is_int = false, true);
  return false;
}

// -1, 0, 1 for two numbers; exact for two ints.
int compare_numbers(const value& a, const value& b) {
  double da = 0, db = 0;
  std::int64_t ia = 0, ib = 0;
  bool a_int = false, b_int = false;
  as_number(a, da, ia, a_int);
  as_number(b, db, ib, b_int);
  if (a_int && b_int) return ia < ib ? -1 : ia > ib ? 1 : 0;
  const double x = a_int ? static_cast<double>(ia) : da, y = b_int ? static_cast<double>(ib) : db;
  return x < y ? -1 : x > y ? 1 : 0;
}

}  // namespace

bool equals(const value& a, const value& b) {
  if (a.is_number() && b.is_number()) {
    const double* fa = a.get<double>();
    const double* fb = b.get<double>();
    if ((fa && std::isnan(*fa)) || (fb && std::isnan(*fb))) return false;
    return compare_numbers(a, b) == 0;
  }
  if (a.v.index() != b.v.index()) return false;
  if (a.is_undefined() || a.is_none()) return true;
  if (const auto* s = a.get<std::string>()) return *s == *b.get<std::string>();
  if (const auto* l = a.as_list()) {
    const list& r = *b.as_list();
    if (l->is_generator || r.is_generator) return *a.get<list_ptr>() == *b.get<list_ptr>();
    if (l->size() != r.size() || l->is_tuple != r.is_tuple) return false;
    for (std::size_t k = 0; k < l->size(); ++k)
      if (!equals((*l)[k], r[k])) return false;
    return true;
  }
  if (const auto* d = a.as_dict()) {
    const dict& r = *b.as_dict();
    if (d->items.size() != r.items.size()) return false;
    for (const auto& [k, v] : d->items) {
      const value* o = r.find(k);
      if (!o || !equals(v, *o)) return false;
    }
    return true;
  }
  if (const auto* n = a.get<namespace_ptr>()) return *n == *b.get<namespace_ptr>();
  return *a.get<callable_ptr>() == *b.get<callable_ptr>();
}

result<bool> less(const value& a, const value& b) {
  if (a.is_number() && b.is_number()) return compare_numbers(a, b) < 0;
  if (a.is_string() && b.is_string()) return *a.get<std::string>() < *b.get<std::string>();
  if (a.as_list() && b.as_list()) {
    const list &x = *a.as_list(), &y = *b.as_list();
    for (std::size_t k = 0; k < x.size() && k < y.size(); ++k) {
      if (equals(x[k], y[k])) continue;
      return less(x[k], y[k]);
    }
    return x.size() < y.size();
  }
  return fail("'<' not supported between instances of '" + std::string(type_name(a)) + "' and '" +
              std::string(type_name(b)) + "'");
}

std::string float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  char buf[64];
  const auto res = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific);
  std::string_view s(buf, static_cast<std::size_t>(res.ptr - buf));  // shortest: "-d.ddde+XX"
  std::string out;
  if (s.front() == '-') {
    out += '-';
    s.remove_prefix(1);
  }
  const std::size_t e = s.find('e');
  std::string digits(1, s[0]);
  if (e > 1) digits += s.substr(2, e - 2);
  int exp = 0;
  std::from_chars(s.data() + e + 2, s.data() + s.size(), exp);  // after "e+" or "e-"
  if (s[e + 1] == '-') exp = -exp;
  if (exp < -4 || exp >= 16) {  // Python switches to exponent form outside 1e-4 <= |d| < 1e16
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    out += exp < 0 ? "e-" : "e+";
    const std::string mag = std::to_string(std::abs(exp));
    out += (mag.size() < 2 ? "0" : "") + mag;
  } else if (exp < 0) {
    out += "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
  } else {
    const auto n_int = static_cast<std::size_t>(exp + 1);
    if (digits.size() <= n_int)
      out += digits + std::string(n_int - digits.size(), '0') + ".0";
    else
      out += digits.substr(0, n_int) + "." + digits.substr(n_int);
  }
  return out;
}

namespace {

// `open`: the namespaces being printed around v. A namespace is the one mutable value, so a cycle
// (`{% set ns.k = ns %}`) passes through one: met again, it prints as Python's repr guard does,
// <Namespace {...}>.
std::string to_text(const value& v, bool repr, std::vector<const namespace_obj*>& open) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, undefined_t>)
          return repr ? "Undefined" : "";
        else if constexpr (std::is_same_v<T, none_t>)
          return "None";
        else if constexpr (std::is_same_v<T, bool>)
          return x ? "True" : "False";
        else if constexpr (std::is_same_v<T, std::int64_t>)
          return std::to_string(x);
        else if constexpr (std::is_same_v<T, double>)
          return float_repr(x);
        else if constexpr (std::is_same_v<T, std::string>)
          return repr ? py_quote(x) : x;
        else if constexpr (std::is_same_v<T, list_ptr>) {
          if (x->is_generator) return "<generator object>";
          std::string out = x->is_tuple ? "(" : "[";
          for (std::size_t k = 0; k < x->size(); ++k) out += (k ? ", " : "") + to_text((*x)[k], true, open);
          if (x->is_tuple) return out + (x->size() == 1 ? ",)" : ")");
          return out + "]";
        } else if constexpr (std::is_same_v<T, dict_ptr>) {
          std::string out = "{";
          for (std::size_t k = 0; k < x->items.size(); ++k)
            out += (k ? ", " : "") + py_quote(x->items[k].first) + ": " + to_text(x->items[k].second, true, open);
          return out + "}";
        } else if constexpr (std::is_same_v<T, namespace_ptr>) {
          if (std::ranges::find(open, x.get()) != open.end()) return "<Namespace {...}>";
          open.push_back(x.get());
          std::string out = "<Namespace " + to_text(value(x->attrs), true, open) + ">";
          open.pop_back();
          return out;
        } else {
          return "<function " + x->name + ">";
        }
      },
      v.v);
}

void json_newline(std::string& out, int indent, int depth) {
  out += '\n';
  out.append(static_cast<std::size_t>(indent * depth), ' ');
}

result<void> json_write(std::string& out, const value& v, int indent, std::string_view item_sep,
                        std::string_view key_sep, bool sort_keys, int depth) {
  if (depth > 512) return fail("tojson: nesting too deep");
  if (v.is_none())
    out += "null";
  else if (const auto* b = v.get<bool>())
    out += *b ? "true" : "false";
  else if (const auto* i = v.get<std::int64_t>())
    out += std::to_string(*i);
  else if (const auto* d = v.get<double>()) {
    out += std::isnan(*d) ? "NaN" : std::isinf(*d) ? (*d < 0 ? "-Infinity" : "Infinity") : float_repr(*d);
  } else if (const auto* s = v.get<std::string>())
    out += json_quote(*s);
  else if (const list* l = v.as_list(); l && !l->is_generator) {
    if (l->empty()) return out += "[]", result<void>{};
    out += '[';
    for (std::size_t k = 0; k < l->size(); ++k) {
      if (k) out += item_sep;
      if (indent >= 0) json_newline(out, indent, depth + 1);
      JINJA_CHECK(json_write(out, (*l)[k], indent, item_sep, key_sep, sort_keys, depth + 1));
    }
    if (indent >= 0) json_newline(out, indent, depth);
    out += ']';
  } else if (const dict* m = v.as_dict()) {
    if (m->items.empty()) return out += "{}", result<void>{};
    std::vector<const std::pair<std::string, value>*> items;
    for (const auto& kv : m->items) items.push_back(&kv);
    if (sort_keys) std::stable_sort(items.begin(), items.end(), [](auto* a, auto* b) { return a->first < b->first; });
    out += '{';
    for (std::size_t k = 0; k < items.size(); ++k) {
      if (k) out += item_sep;
      if (indent >= 0) json_newline(out, indent, depth + 1);
      out += json_quote(items[k]->first);
      out += key_sep;
      JINJA_CHECK(json_write(out, items[k]->second, indent, item_sep, key_sep, sort_keys, depth + 1));
    }
    if (indent >= 0) json_newline(out, indent, depth);
    out += '}';
  } else {
    return fail("Object of type " + std::string(type_name(v)) + " is not JSON serializable");
  }
  return {};
}

}  // namespace

std::string to_str(const value& v) {
  std::vector<const namespace_obj*> open;
  return to_text(v, false, open);
}
std::string to_repr(const value& v) {
  std::vector<const namespace_obj*> open;
  return to_text(v, true, open);
}

result<std::string> to_json(const value& v, int indent, std::string_view item_sep, std::string_view key_sep,
                            bool sort_keys) {
  std::string out;
  JINJA_CHECK(json_write(out, v, indent, item_sep, key_sep, sort_keys, 0));
  return out;
}

result<list> iterate(const value& v) {
  if (v.is_undefined()) return list{};
  if (const list* l = v.as_list()) {
    list items = *l;
    items.is_generator = items.is_tuple = false;
    return items;
  }
  if (const dict* d = v.as_dict()) {
    list keys;
    for (const auto& kv : d->items) keys.emplace_back(kv.first);
    return keys;
  }
  if (const auto* s = v.get<std::string>()) {
    list chars;
    for (std::string_view ch : utf8_chars(*s)) chars.emplace_back(ch);
    return chars;
  }
  return fail("'" + std::string(type_name(v)) + "' object is not iterable");
}

result<std::int64_t> length(const value& v) {
  if (v.is_undefined()) return 0;
  if (const auto* s = v.get<std::string>()) return static_cast<std::int64_t>(utf8_chars(*s).size());
  if (const list* l = v.as_list(); l && !l->is_generator) return static_cast<std::int64_t>(l->size());
  if (const dict* d = v.as_dict()) return static_cast<std::int64_t>(d->items.size());
  return fail("object of type '" + std::string(type_name(v)) + "' has no len()");
}

}  // namespace pagedserve::jinja
