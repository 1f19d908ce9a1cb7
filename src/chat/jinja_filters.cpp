// jinja2's builtin filters (`value | name(args)`) that chat templates use, with jinja2's argument
// names and defaults, plus transformers' tojson (json.dumps with ensure_ascii=False, no HTML
// escaping, optional indent/separators/sort_keys). Filters that jinja2 writes as generators
// (map, select, items) return lists; templates only ever consume them with list, join or for.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>

#include "chat/jinja_interp.hpp"

namespace pagedserve::jinja {
namespace {

using names = std::span<const std::string_view>;

// "a.b.0" as jinja2's make_attrgetter walks it: item lookup (numbers as indexes), then attribute.
result<value> attr_path(const value& v, std::string_view path) {
  value cur = v;
  while (!path.empty()) {
    const std::size_t dot = path.find('.');
    const std::string_view part = path.substr(0, dot);
    path = dot == std::string_view::npos ? std::string_view{} : path.substr(dot + 1);
    std::int64_t i = 0;
    const bool is_index =
        !part.empty() && std::from_chars(part.data(), part.data() + part.size(), i).ptr == part.data() + part.size();
    JINJA_TRY(cur, is_index ? item_get(cur, value(i)) : item_get(cur, value(part)));
  }
  return cur;
}

result<std::string> path_arg(const value& v) {
  if (const auto* s = v.get<std::string>()) return *s;
  if (const auto* i = v.get<std::int64_t>()) return std::to_string(*i);
  return fail("attribute must be a string");
}

// The key a sort/min/max/unique compares: the attribute if given, lowercased unless case-sensitive.
result<value> sort_key(const value& v, const value& attribute, bool case_sensitive) {
  value key = v;
  if (!attribute.is_undefined() && !attribute.is_none()) {
    JINJA_TRY(const std::string path, path_arg(attribute));
    JINJA_TRY(key, attr_path(v, path));
  }
  if (!case_sensitive && key.is_string()) return py_lower(*key.get<std::string>());
  return key;
}

// Stable sort with Python ordering; an unorderable pair is an error, not undefined behaviour.
result<list> sorted(list items, const std::vector<value>& keys, bool reverse) {
  std::vector<std::size_t> order(items.size());
  for (std::size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::string error;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
    if (!error.empty()) return false;
    auto r = reverse ? less(keys[b], keys[a]) : less(keys[a], keys[b]);
    if (!r) error = r.error();
    return r && *r;
  });
  if (!error.empty()) return fail(error);
  list out;
  for (std::size_t k : order) out.push_back(std::move(items[k]));
  return out;
}

// ---- the filters, alphabetically ----

result<value> f_abs(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "abs"));
  if (const auto* i = v.get<std::int64_t>()) return *i < 0 ? -*i : *i;
  if (const auto* b = v.get<bool>()) return std::int64_t{*b};
  if (const auto* d = v.get<double>()) return std::fabs(*d);
  return fail("bad operand type for abs(): '" + std::string(type_name(v)) + "'");
}

result<value> f_attr(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"name"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 1, "attr"));
  if (!args[0].is_string()) return fail("attr name must be a string");
  return attr_get(v, *args[0].get<std::string>());
}

result<value> f_capitalize(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "capitalize"));
  return py_capitalize(to_str(v));
}

result<value> f_default(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"default_value", "boolean"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "default"));
  const value fallback = args[0].is_undefined() ? value("") : args[0];
  if (v.is_undefined() || (truthy(args[1]) && !truthy(v))) return fallback;
  return v;
}

result<value> f_dictsort(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"case_sensitive", "by", "reverse"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "dictsort"));
  const dict* d = v.as_dict();
  if (!d) return fail("dictsort: can only sort a mapping");
  const bool by_value = args[1].is_string() && *args[1].get<std::string>() == "value";
  list items;
  std::vector<value> keys;
  for (const auto& [k, x] : d->items) {
    items.push_back(pair_tuple(k, x));
    JINJA_TRY(value key, sort_key(by_value ? x : value(k), value(), truthy(args[0])));
    keys.push_back(std::move(key));
  }
  JINJA_TRY(list out, sorted(std::move(items), keys, truthy(args[2])));
  return out;
}

result<value> f_escape(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "escape"));
  std::string out;
  for (char c : to_str(v)) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&#34;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

result<value> f_first_last(const value& v, call_args&& a, bool first) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, first ? "first" : "last"));
  JINJA_TRY(const list items, iterate(v));
  if (items.empty()) return value(undefined_t{"No first item, sequence was empty."});
  return first ? items.front() : items.back();
}
result<value> f_first(interpreter&, const value& v, call_args&& a) { return f_first_last(v, std::move(a), true); }
result<value> f_last(interpreter&, const value& v, call_args&& a) { return f_first_last(v, std::move(a), false); }

// Python float(str): surrounding whitespace allowed, "inf"/"nan" spelled out.
bool parse_float(std::string_view s, double& out) {
  const std::string t = py_strip(s, nullptr, true, true);
  if (t.empty()) return false;
  const char* b = t.data() + (t[0] == '+' ? 1 : 0);
  const auto r = std::from_chars(b, t.data() + t.size(), out);
  return r.ec == std::errc{} && r.ptr == t.data() + t.size();
}

result<value> f_float(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"default"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "float"));
  double d = 0;
  if (v.is_number()) return v.get<double>() ? *v.get<double>() : static_cast<double>(*arg_int(v, 0, ""));
  if (v.is_string() && parse_float(*v.get<std::string>(), d)) return d;
  return args[0].is_undefined() ? value(0.0) : args[0];
}

result<value> f_int(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"default", "base"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "int"));
  JINJA_TRY(const std::int64_t base, arg_int(args[1], 10, "base"));
  const value fallback = args[0].is_undefined() ? value(0) : args[0];
  if (const auto* d = v.get<double>()) {
    if (!std::isfinite(*d) || std::fabs(*d) >= 9.2e18) return fail("cannot convert float to integer");
    return static_cast<std::int64_t>(*d);
  }
  if (v.is_number()) return *arg_int(v, 0, "");
  if (!v.is_string()) return fallback;
  std::string s = py_strip(*v.get<std::string>(), nullptr, true, true);
  std::erase(s, '_');
  std::int64_t i = 0;
  const char* b = s.data() + (!s.empty() && s[0] == '+' ? 1 : 0);
  static constexpr std::pair<int, std::string_view> prefixes[] = {{16, "0x"}, {16, "0X"}, {8, "0o"},
                                                                  {8, "0O"},  {2, "0b"},  {2, "0B"}};
  for (const auto& [pb, prefix] : prefixes)
    if (base == pb && std::string_view(b, s.data() + s.size()).starts_with(prefix)) b += 2;
  if (base >= 2 && base <= 36) {
    const auto r = std::from_chars(b, s.data() + s.size(), i, static_cast<int>(base));
    if (r.ec == std::errc{} && r.ptr == s.data() + s.size() && !s.empty()) return i;
  }
  double d = 0;
  if (parse_float(s, d) && std::isfinite(d) && std::fabs(d) < 9.2e18) return static_cast<std::int64_t>(d);
  return fallback;
}

result<value> f_indent(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"width", "first", "blank"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "indent"));
  if (v.is_undefined()) return undefined_error(v);  // jinja2 appends to the value itself
  std::string pad;
  if (args[0].is_string()) {
    pad = *args[0].get<std::string>();
  } else {
    JINJA_TRY(const std::int64_t width, arg_int(args[0], 4, "indent width"));
    pad.assign(static_cast<std::size_t>(std::clamp<std::int64_t>(width, 0, 1024)), ' ');
  }
  std::vector<std::string> lines;  // jinja2 splits s + "\n" with splitlines()
  const std::string s = to_str(v);
  std::size_t pos = 0;
  for (std::size_t nl; (nl = s.find('\n', pos)) != s.npos; pos = nl + 1) lines.push_back(s.substr(pos, nl - pos));
  lines.push_back(s.substr(pos));
  std::string out;
  for (std::size_t k = 0; k < lines.size(); ++k) {
    if (k) out += '\n';
    const bool indent_line = k == 0 ? truthy(args[1]) : (truthy(args[2]) || !lines[k].empty());
    out += (indent_line ? pad : "") + lines[k];
  }
  return out;
}

result<value> f_items(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "items"));
  if (v.is_undefined()) return generator_of({});
  const dict* d = v.as_dict();
  if (!d) return fail("Can only get item pairs from a mapping.");
  list out;
  for (const auto& [k, x] : d->items) out.push_back(pair_tuple(k, x));
  return generator_of(std::move(out));
}

result<value> f_join(interpreter& in, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"d", "attribute"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "join"));
  JINJA_TRY(const list items, iterate(v));
  const std::string sep = to_str(args[0]);
  std::string out;
  for (std::size_t k = 0; k < items.size(); ++k) {
    value item = items[k];
    if (!args[1].is_undefined() && !args[1].is_none()) {
      JINJA_TRY(const std::string path, path_arg(args[1]));
      JINJA_TRY(item, attr_path(item, path));
    }
    out += (k ? sep : "") + to_str(item);
    JINJA_CHECK(in.check_size(out.size()));
  }
  return out;
}

result<value> f_length(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "length"));
  JINJA_TRY(const std::int64_t n, length(v));
  return n;
}

result<value> f_list(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "list"));
  JINJA_TRY(list items, iterate(v));
  return items;
}

result<value> f_lower(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "lower"));
  return py_lower(to_str(v));
}

result<value> f_upper(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "upper"));
  return py_upper(to_str(v));
}

// map(attribute='x', default=...) or map('filter', args...).
result<value> f_map(interpreter& in, const value& v, call_args&& a) {
  JINJA_TRY(const list items, iterate(v));
  list out;
  const auto attr_kw = std::find_if(a.keyword.begin(), a.keyword.end(), [](auto& k) { return k.first == "attribute"; });
  if (attr_kw != a.keyword.end()) {
    JINJA_TRY(const std::string path, path_arg(attr_kw->second));
    value fallback;
    for (auto& [k, x] : a.keyword)
      if (k == "default")
        fallback = x;
      else if (k != "attribute")
        return fail("map() got an unexpected keyword argument '" + k + "'");
    for (const value& item : items) {
      JINJA_TRY(value x, attr_path(item, path));
      out.push_back(x.is_undefined() && !fallback.is_undefined() ? fallback : std::move(x));
    }
    return generator_of(std::move(out));
  }
  if (a.positional.empty() || !a.positional[0].is_string()) return fail("map() needs a filter name or attribute=");
  const std::string name = *a.positional[0].get<std::string>();
  const filter_fn* f = filter_find(name);
  if (!f) return fail("no filter named '" + name + "'");
  for (const value& item : items) {
    call_args rest{{a.positional.begin() + 1, a.positional.end()}, a.keyword};
    JINJA_TRY(value x, (*f)(in, item, std::move(rest)));
    out.push_back(std::move(x));
  }
  return generator_of(std::move(out));
}

result<value> f_min_max(const value& v, call_args&& a, bool is_max) {
  static constexpr std::string_view p[] = {"case_sensitive", "attribute"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, is_max ? "max" : "min"));
  JINJA_TRY(const list items, iterate(v));
  if (items.empty()) return value(undefined_t{"No aggregated item, sequence was empty."});
  std::size_t best = 0;
  JINJA_TRY(value best_key, sort_key(items[0], args[1], truthy(args[0])));
  for (std::size_t k = 1; k < items.size(); ++k) {
    JINJA_TRY(value key, sort_key(items[k], args[1], truthy(args[0])));
    JINJA_TRY(const bool better, is_max ? less(best_key, key) : less(key, best_key));
    if (better) best = k, best_key = std::move(key);
  }
  return items[best];
}
result<value> f_max(interpreter&, const value& v, call_args&& a) { return f_min_max(v, std::move(a), true); }
result<value> f_min(interpreter&, const value& v, call_args&& a) { return f_min_max(v, std::move(a), false); }

result<value> f_replace(interpreter& in, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"old", "new", "count"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 2, "replace"));
  JINJA_TRY(const std::int64_t count, arg_int(args[2], -1, "count"));
  std::string out = py_replace(to_str(v), to_str(args[0]), to_str(args[1]), count);
  JINJA_CHECK(in.check_size(out.size()));
  return out;
}

result<value> f_reverse(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "reverse"));
  JINJA_TRY(list items, iterate(v));
  std::reverse(items.begin(), items.end());
  if (!v.is_string()) return generator_of(std::move(items));
  std::string out;
  for (const value& ch : items) out += *ch.get<std::string>();
  return out;
}

result<value> f_round(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"precision", "method"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "round"));
  JINJA_TRY(const std::int64_t precision, arg_int(args[0], 0, "precision"));
  const std::string method = args[1].is_undefined() ? "common" : to_str(args[1]);
  if (!v.is_number()) return fail("round: value must be a number");
  if (method == "common" && !v.get<double>()) return *arg_int(v, 0, "");  // Python round(int, n) stays an int
  const double x = v.get<double>() ? *v.get<double>() : static_cast<double>(*arg_int(v, 0, ""));
  const double scale = std::pow(10.0, static_cast<double>(precision));
  if (method == "common") return std::nearbyint(x * scale) / scale;
  if (method == "ceil") return std::ceil(x * scale) / scale;
  if (method == "floor") return std::floor(x * scale) / scale;
  return fail("method must be common, ceil or floor");
}

// select/reject(test, args...) and selectattr/rejectattr(attr, test, args...).
result<value> select_impl(interpreter& in, const value& v, call_args&& a, bool by_attr, bool keep_matching) {
  JINJA_TRY(const list items, iterate(v));
  std::size_t next_arg = 0;
  std::string path;
  if (by_attr) {
    if (a.positional.empty()) return fail("selectattr/rejectattr need an attribute name");
    JINJA_TRY(path, path_arg(a.positional[next_arg++]));
  }
  const test_fn* test = nullptr;
  if (next_arg < a.positional.size()) {
    const value& name = a.positional[next_arg++];
    if (!name.is_string() || !(test = test_find(*name.get<std::string>())))
      return fail("no test named " + to_repr(name));
  }
  list out;
  for (const value& item : items) {
    value subject = item;
    if (by_attr) {
      JINJA_TRY(subject, attr_path(item, path));
    }
    bool ok = truthy(subject);
    if (test) {
      call_args rest{{a.positional.begin() + static_cast<std::ptrdiff_t>(next_arg), a.positional.end()}, a.keyword};
      JINJA_TRY(ok, (*test)(in, subject, std::move(rest)));
    }
    if (ok == keep_matching) out.push_back(item);
  }
  return generator_of(std::move(out));
}
result<value> f_select(interpreter& in, const value& v, call_args&& a) {
  return select_impl(in, v, std::move(a), false, true);
}
result<value> f_reject(interpreter& in, const value& v, call_args&& a) {
  return select_impl(in, v, std::move(a), false, false);
}
result<value> f_selectattr(interpreter& in, const value& v, call_args&& a) {
  return select_impl(in, v, std::move(a), true, true);
}
result<value> f_rejectattr(interpreter& in, const value& v, call_args&& a) {
  return select_impl(in, v, std::move(a), true, false);
}

result<value> f_safe(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "safe"));
  return v.is_string() ? v : value(to_str(v));  // Markup(str(v))
}

result<value> f_sort(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"reverse", "case_sensitive", "attribute"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "sort"));
  JINJA_TRY(list items, iterate(v));
  std::vector<value> keys;
  for (const value& item : items) {
    JINJA_TRY(value key, sort_key(item, args[2], truthy(args[1])));
    keys.push_back(std::move(key));
  }
  JINJA_TRY(list out, sorted(std::move(items), keys, truthy(args[0])));
  return out;
}

result<value> f_string(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "string"));
  return to_str(v);
}

result<value> f_sum(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"attribute", "start"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "sum"));
  JINJA_TRY(const list items, iterate(v));
  value total = args[1].is_undefined() ? value(0) : args[1];
  for (const value& item : items) {
    value x = item;
    if (!args[0].is_undefined() && !args[0].is_none()) {
      JINJA_TRY(const std::string path, path_arg(args[0]));
      JINJA_TRY(x, attr_path(item, path));
    }
    if (!x.is_number() || !total.is_number()) return fail("sum: items must be numbers");
    if (total.get<double>() || x.get<double>())
      total = (total.get<double>() ? *total.get<double>() : static_cast<double>(*arg_int(total, 0, ""))) +
              (x.get<double>() ? *x.get<double>() : static_cast<double>(*arg_int(x, 0, "")));
    else
      total = *arg_int(total, 0, "") + *arg_int(x, 0, "");
  }
  return total;
}

// jinja2's title filter: capitalise each run between "-", whitespace and opening brackets.
result<value> f_title(interpreter&, const value& v, call_args&& a) {
  JINJA_CHECK(args_bind(std::move(a), {}, 0, "title"));
  std::string out, word;
  bool word_is_sep = false;
  auto flush = [&] {
    if (!word.empty()) out += py_capitalize(word);
    word.clear();
  };
  const std::string text = to_str(v);
  for (std::string_view ch : utf8_chars(text)) {
    const bool sep = py_isspace(ch) || ch == "-" || ch == "(" || ch == "{" || ch == "[" || ch == "<";
    if (sep != word_is_sep) flush(), word_is_sep = sep;
    word += ch;
  }
  flush();
  return out;
}

// ensure_ascii=True: non-ASCII characters (only ever inside JSON strings) as \uXXXX escapes.
std::string json_ascii(std::string_view json) {
  std::string out;
  for (std::string_view ch : utf8_chars(json)) {
    const std::uint32_t cp = char_code_point(ch);
    if (cp < 0x80) {
      out += ch;
      continue;
    }
    char buf[16];
    if (cp < 0x10000) {
      std::snprintf(buf, sizeof buf, "\\u%04x", cp);
    } else {
      const std::uint32_t v = cp - 0x10000;
      std::snprintf(buf, sizeof buf, "\\u%04x\\u%04x", 0xD800 + (v >> 10), 0xDC00 + (v & 0x3FF));
    }
    out += buf;
  }
  return out;
}

result<value> f_tojson(interpreter& in, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"ensure_ascii", "indent", "separators", "sort_keys"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "tojson"));
  JINJA_TRY(const std::int64_t indent, arg_int(args[1], -1, "indent"));
  std::string item_sep = indent >= 0 ? "," : ", ", key_sep = ": ";
  if (const list* seps = args[2].as_list()) {
    if (seps->size() != 2 || !(*seps)[0].is_string() || !(*seps)[1].is_string())
      return fail("tojson: separators must be two strings");
    item_sep = *(*seps)[0].get<std::string>();
    key_sep = *(*seps)[1].get<std::string>();
  }
  JINJA_TRY(std::string out,
            to_json(v, static_cast<int>(std::clamp<std::int64_t>(indent, -1, 64)), item_sep, key_sep, truthy(args[3])));
  if (truthy(args[0])) out = json_ascii(out);
  JINJA_CHECK(in.check_size(out.size()));
  return out;
}

result<value> f_trim(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"chars"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "trim"));
  const bool has_chars = args[0].is_string();
  const std::string chars = has_chars ? *args[0].get<std::string>() : "";
  return py_strip(to_str(v), has_chars ? &chars : nullptr, true, true);
}

result<value> f_unique(interpreter&, const value& v, call_args&& a) {
  static constexpr std::string_view p[] = {"case_sensitive", "attribute"};
  JINJA_TRY(auto args, args_bind(std::move(a), p, 0, "unique"));
  JINJA_TRY(const list items, iterate(v));
  list out;
  std::vector<value> seen;
  for (const value& item : items) {
    JINJA_TRY(value key, sort_key(item, args[1], truthy(args[0])));
    if (std::none_of(seen.begin(), seen.end(), [&](const value& s) { return equals(s, key); }))
      seen.push_back(std::move(key)), out.push_back(item);
  }
  return generator_of(std::move(out));
}

struct filter_entry {
  std::string_view name;
  filter_fn fn;
};

// clang-format off
constexpr filter_entry filters[] = {
    {"abs", f_abs},         {"attr", f_attr},       {"capitalize", f_capitalize}, {"count", f_length},
    {"d", f_default},       {"default", f_default}, {"dictsort", f_dictsort},     {"e", f_escape},
    {"escape", f_escape},   {"first", f_first},     {"float", f_float},           {"indent", f_indent},
    {"int", f_int},         {"items", f_items},     {"join", f_join},             {"last", f_last},
    {"length", f_length},   {"list", f_list},       {"lower", f_lower},           {"map", f_map},
    {"max", f_max},         {"min", f_min},         {"reject", f_reject},         {"rejectattr", f_rejectattr},
    {"replace", f_replace}, {"reverse", f_reverse}, {"round", f_round},           {"safe", f_safe},
    {"select", f_select},   {"selectattr", f_selectattr}, {"sort", f_sort},       {"string", f_string},
    {"sum", f_sum},         {"title", f_title},     {"tojson", f_tojson},         {"trim", f_trim},
    {"unique", f_unique},   {"upper", f_upper},
};
// clang-format on

}  // namespace

const filter_fn* filter_find(std::string_view name) {
  for (const auto& f : filters)
    if (f.name == name) return &f.fn;
  return nullptr;
}

}  // namespace pagedserve::jinja
