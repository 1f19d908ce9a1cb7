// Attribute and item access as jinja2's sandbox resolves them, the Python str and dict methods
// templates call (message.content.startswith(...), message.get('x'), tool.items()), and the
// global functions transformers provides: range, namespace, dict, raise_exception, strftime_now.
// Methods that would mutate (list.append, dict.update, ...) are refused, as the immutable sandbox
// refuses them.
#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <ctime>

#include "chat/jinja_interp.hpp"

namespace pagedserve::jinja {
namespace {

std::string object_name(const value& v) { return v.is_none() ? "None" : "'" + std::string(type_name(v)) + " object'"; }

value missing(const value& obj, std::string_view name) {
  return undefined_t{object_name(obj) + " has no attribute '" + std::string(name) + "'"};
}

bool is_unsafe_method(std::string_view name) {
  static constexpr std::array<std::string_view, 13> names = {"append",  "extend",  "insert", "pop",    "remove",
                                                             "sort",    "reverse", "clear",  "update", "setdefault",
                                                             "popitem", "add",     "discard"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

result<std::string> str_arg(const value& v, std::string_view what) {
  if (!v.is_string()) return fail(std::string(what) + " must be str, not " + std::string(type_name(v)));
  return *v.get<std::string>();
}

// str.startswith / endswith with a string or a tuple (list) of candidates.
result<value> affix_test(const std::string& s, const value& arg, bool prefix) {
  std::vector<std::string> candidates;
  if (const list* l = arg.as_list()) {
    for (const value& v : *l) {
      JINJA_TRY(std::string c, str_arg(v, "tuple for startswith/endswith"));
      candidates.push_back(std::move(c));
    }
  } else {
    JINJA_TRY(std::string c, str_arg(arg, "startswith/endswith argument"));
    candidates.push_back(std::move(c));
  }
  for (const auto& c : candidates)
    if (prefix ? s.starts_with(c) : s.ends_with(c)) return true;
  return false;
}

// Optional string argument: undefined or None means "not given".
result<bool> opt_str(const value& v, std::string& out, std::string_view what) {
  if (v.is_undefined() || v.is_none()) return false;
  JINJA_TRY(out, str_arg(v, what));
  return true;
}

bool all_chars(const std::string& s, bool (*pred)(unsigned char)) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [&](char c) { return pred(static_cast<unsigned char>(c)); });
}

result<value> str_method(interpreter& in, const std::string& s, std::string_view name, call_args&& args) {
  static constexpr std::string_view p_chars[] = {"chars"};
  static constexpr std::string_view p_split[] = {"sep", "maxsplit"};
  static constexpr std::string_view p_replace[] = {"old", "new", "count"};
  static constexpr std::string_view p_affix[] = {"prefix"};
  static constexpr std::string_view p_sub[] = {"sub"};
  static constexpr std::string_view p_iterable[] = {"iterable"};
  const std::string fn = "str." + std::string(name);
  if (name == "startswith" || name == "endswith") {
    JINJA_TRY(auto a, args_bind(std::move(args), p_affix, 1, fn));
    return affix_test(s, a[0], name == "startswith");
  }
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    JINJA_TRY(auto a, args_bind(std::move(args), p_chars, 0, fn));
    std::string chars;
    JINJA_TRY(const bool has, opt_str(a[0], chars, fn + " arg"));
    return py_strip(s, has ? &chars : nullptr, name != "rstrip", name != "lstrip");
  }
  if (name == "split" || name == "rsplit") {
    JINJA_TRY(auto a, args_bind(std::move(args), p_split, 0, fn));
    std::string sep;
    JINJA_TRY(const bool has, opt_str(a[0], sep, "separator"));
    if (has && sep.empty()) return fail("empty separator");
    JINJA_TRY(const std::int64_t maxsplit, arg_int(a[1], -1, "maxsplit"));
    list out;
    for (auto& part : py_split(s, has ? &sep : nullptr, maxsplit, name == "rsplit")) out.emplace_back(std::move(part));
    return out;
  }
  if (name == "replace") {
    JINJA_TRY(auto a, args_bind(std::move(args), p_replace, 2, fn));
    JINJA_TRY(const std::string old, str_arg(a[0], "replace() argument 1"));
    JINJA_TRY(const std::string with, str_arg(a[1], "replace() argument 2"));
    JINJA_TRY(const std::int64_t count, arg_int(a[2], -1, "count"));
    std::string out = py_replace(s, old, with, count);
    JINJA_CHECK(in.check_size(out.size()));
    return out;
  }
  if (name == "find" || name == "count") {
    JINJA_TRY(auto a, args_bind(std::move(args), p_sub, 1, fn));
    JINJA_TRY(const std::string sub, str_arg(a[0], fn + "() argument"));
    if (name == "find") {
      const std::size_t at = s.find(sub);
      return at == std::string::npos ? std::int64_t{-1} : static_cast<std::int64_t>(utf8_chars(s.substr(0, at)).size());
    }
    if (sub.empty()) return static_cast<std::int64_t>(utf8_chars(s).size() + 1);
    std::int64_t n = 0;
    for (std::size_t at = s.find(sub); at != std::string::npos; at = s.find(sub, at + sub.size())) ++n;
    return n;
  }
  if (name == "join") {
    JINJA_TRY(auto a, args_bind(std::move(args), p_iterable, 1, fn));
    JINJA_TRY(const list items, iterate(a[0]));
    std::string out;
    for (std::size_t k = 0; k < items.size(); ++k) {
      JINJA_TRY(const std::string item, str_arg(items[k], "sequence item"));
      out += (k ? s : "") + item;
      JINJA_CHECK(in.check_size(out.size()));
    }
    return out;
  }
  JINJA_CHECK(args_bind(std::move(args), {}, 0, fn));
  if (name == "lower") return py_lower(s);
  if (name == "upper") return py_upper(s);
  if (name == "title") return py_title(s);
  if (name == "capitalize") return py_capitalize(s);
  if (name == "isdigit") return all_chars(s, [](unsigned char c) { return c >= '0' && c <= '9'; });
  if (name == "isalpha") return all_chars(s, [](unsigned char c) { return std::isalpha(c) != 0 || c >= 0x80; });
  if (name == "isspace") {
    const auto cs = utf8_chars(s);
    return !cs.empty() && std::all_of(cs.begin(), cs.end(), py_isspace);
  }
  if (name == "islower") return py_lower(s) == s && py_upper(s) != s;
  if (name == "isupper") return py_upper(s) == s && py_lower(s) != s;
  return fail("unknown method " + fn);
}

bool is_str_method(std::string_view name) {
  static constexpr std::array<std::string_view, 20> names = {
      "startswith", "endswith", "strip", "lstrip",     "rstrip",  "split",   "rsplit",  "replace", "find",    "count",
      "join",       "lower",    "upper", "capitalize", "isdigit", "isalpha", "isspace", "islower", "isupper", "title"};
  return std::find(names.begin(), names.end(), name) != names.end();
}

result<value> dict_method(const dict_ptr& d, std::string_view name, call_args&& args) {
  static constexpr std::string_view p_get[] = {"key", "default"};
  const std::string fn = "dict." + std::string(name);
  if (name == "get") {
    JINJA_TRY(auto a, args_bind(std::move(args), p_get, 1, fn));
    const value* v = a[0].is_string() ? d->find(*a[0].get<std::string>()) : nullptr;
    if (v) return *v;
    return a[1].is_undefined() ? value(none_t{}) : a[1];
  }
  JINJA_CHECK(args_bind(std::move(args), {}, 0, fn));
  list out;
  for (const auto& [k, v] : d->items) {
    if (name == "items")
      out.push_back(pair_tuple(k, v));
    else if (name == "keys")
      out.emplace_back(k);
    else
      out.push_back(v);
  }
  return out;
}

value bound(std::string name, std::function<result<value>(interpreter&, call_args&&)> fn) {
  return std::make_shared<const callable>(callable{std::move(name), std::move(fn)});
}

}  // namespace

result<std::vector<value>> args_bind(call_args&& args, std::span<const std::string_view> names, std::size_t n_required,
                                     std::string_view fn_name) {
  const std::string fn(fn_name);
  if (args.positional.size() > names.size())
    return fail(fn + "() takes at most " + std::to_string(names.size()) + " argument(s) (" +
                std::to_string(args.positional.size()) + " given)");
  std::vector<value> out(names.size());
  std::vector<bool> given(names.size(), false);
  for (std::size_t k = 0; k < args.positional.size(); ++k) out[k] = std::move(args.positional[k]), given[k] = true;
  for (auto& [key, v] : args.keyword) {
    const auto it = std::find(names.begin(), names.end(), key);
    if (it == names.end()) return fail(fn + "() got an unexpected keyword argument '" + key + "'");
    const auto k = static_cast<std::size_t>(it - names.begin());
    if (given[k]) return fail(fn + "() got multiple values for argument '" + key + "'");
    out[k] = std::move(v);
    given[k] = true;
  }
  for (std::size_t k = 0; k < n_required; ++k)
    if (!given[k]) return fail(fn + "() missing required argument '" + std::string(names[k]) + "'");
  return out;
}

result<std::int64_t> arg_int(const value& v, std::int64_t fallback, std::string_view what) {
  if (v.is_undefined() || v.is_none()) return fallback;
  if (const auto* i = v.get<std::int64_t>()) return *i;
  if (const auto* b = v.get<bool>()) return std::int64_t{*b};
  return fail(std::string(what) + " must be an integer, not " + std::string(type_name(v)));
}

result<value> attr_get(const value& obj, std::string_view name) {
  if (obj.is_undefined()) return undefined_error(obj);
  const std::string n(name);
  if (const auto* s = obj.get<std::string>()) {
    if (!is_str_method(name)) return missing(obj, name);
    return bound("str." + n,
                 [s = *s, n](interpreter& in, call_args&& a) { return str_method(in, s, n, std::move(a)); });
  }
  if (const auto* d = obj.get<dict_ptr>()) {
    if (name == "items" || name == "keys" || name == "values" || name == "get")
      return bound("dict." + n, [d = *d, n](interpreter&, call_args&& a) { return dict_method(d, n, std::move(a)); });
    if (!is_unsafe_method(name))
      if (const value* v = (*d)->find(name)) return *v;
  }
  if (const auto* ns = obj.get<namespace_ptr>()) {
    if (const value* v = (*ns)->attrs.find(name)) return *v;
  }
  if ((obj.as_list() || obj.as_dict()) && is_unsafe_method(name))
    return value(
        undefined_t{"access to attribute '" + n + "' of '" + std::string(type_name(obj)) + "' object is unsafe"});
  return missing(obj, name);
}

result<value> item_get(const value& obj, const value& key) {
  if (obj.is_undefined()) return undefined_error(obj);
  std::int64_t i = 0;
  const bool int_key = key.get<std::int64_t>() || key.get<bool>();
  if (int_key) i = key.get<std::int64_t>() ? *key.get<std::int64_t>() : *key.get<bool>();
  if (const list* l = obj.as_list(); l && l->is_generator)
    return value(undefined_t{"'generator' object is not subscriptable"});
  if (const list* l = obj.as_list(); l && int_key) {
    const auto n = static_cast<std::int64_t>(l->size());
    if (i < 0) i += n;
    if (i >= 0 && i < n) return (*l)[static_cast<std::size_t>(i)];
    return value(undefined_t{"list object has no element " + to_str(key)});
  }
  if (const auto* s = obj.get<std::string>(); s && int_key) {
    const auto chars = utf8_chars(*s);
    const auto n = static_cast<std::int64_t>(chars.size());
    if (i < 0) i += n;
    if (i >= 0 && i < n) return value(chars[static_cast<std::size_t>(i)]);
    return value(undefined_t{"string index out of range"});
  }
  if (const dict* d = obj.as_dict(); d && key.is_string()) {
    if (const value* v = d->find(*key.get<std::string>())) return *v;
  }
  if (key.is_string()) return attr_get(obj, *key.get<std::string>());
  return value(undefined_t{object_name(obj) + " has no element " + to_repr(key)});
}

// How many values range(start, stop, step) yields (step != 0), computed without overflow for any
// int64 bounds, or an error naming range() when that exceeds max_items.
static result<std::uint64_t> range_length(std::int64_t start, std::int64_t stop, std::int64_t step, std::int64_t max_items) {
  std::uint64_t span = 0, stride = 0;  // |stop - start| and |step| as unsigned: exact even at INT64_MIN/MAX
  if (step > 0 && start < stop) {
    span = static_cast<std::uint64_t>(stop) - static_cast<std::uint64_t>(start);
    stride = static_cast<std::uint64_t>(step);
  } else if (step < 0 && start > stop) {
    span = static_cast<std::uint64_t>(start) - static_cast<std::uint64_t>(stop);
    stride = 0 - static_cast<std::uint64_t>(step);
  } else {
    return 0;
  }
  const std::uint64_t n = (span - 1) / stride + 1;
  if (n > static_cast<std::uint64_t>(max_items))
    return fail("range() of " + std::to_string(n) + " items exceeds the limit of " + std::to_string(max_items));
  return n;
}

void globals_add(dict& root) {
  root.set("range", bound("range", [](interpreter& in, call_args&& a) -> result<value> {
             if (!a.keyword.empty() || a.positional.empty() || a.positional.size() > 3)
               return fail("range() takes 1 to 3 positional arguments");
             std::int64_t v[3] = {0, 0, 1};
             for (std::size_t k = 0; k < a.positional.size(); ++k) {
               JINJA_TRY(v[k], arg_int(a.positional[k], 0, "range() argument"));
             }
             if (a.positional.size() == 1) v[1] = v[0], v[0] = 0;
             if (v[2] == 0) return fail("range() arg 3 must not be zero");
             JINJA_TRY(const std::uint64_t n, range_length(v[0], v[1], v[2], in.limits().max_range_items));
             JINJA_CHECK(in.check_size(static_cast<std::size_t>(n)));
             list out;
             out.reserve(n);
             // start + i*step in unsigned arithmetic: every value lies between start and stop, so the
             // wrapped sum is exact and no step can overflow past stop into an endless loop.
             for (std::uint64_t i = 0; i < n; ++i)
               out.emplace_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(v[0]) + i * static_cast<std::uint64_t>(v[2])));
             return out;
           }));
  root.set("namespace", bound("namespace", [](interpreter& in, call_args&& a) -> result<value> {
             auto ns = std::make_shared<namespace_obj>();
             in.own(ns);
             for (const value& p : a.positional) {
               const dict* d = p.as_dict();
               if (!d) return fail("namespace() positional arguments must be dicts");
               for (const auto& [k, v] : d->items) ns->attrs.set(k, v);
             }
             for (auto& [k, v] : a.keyword) ns->attrs.set(k, std::move(v));
             return value(std::move(ns));
           }));
  root.set("dict", bound("dict", [](interpreter&, call_args&& a) -> result<value> {
             dict out;
             for (const value& p : a.positional) {
               const dict* d = p.as_dict();
               if (!d) return fail("dict() positional arguments must be dicts");
               for (const auto& [k, v] : d->items) out.set(k, v);
             }
             for (auto& [k, v] : a.keyword) out.set(k, std::move(v));
             return out;
           }));
  root.set("raise_exception", bound("raise_exception", [](interpreter&, call_args&& a) -> result<value> {
             return fail(a.positional.empty() ? "raise_exception() called" : to_str(a.positional[0]));
           }));
  root.set("strftime_now", bound("strftime_now", [](interpreter& in, call_args&& a) -> result<value> {
             static constexpr std::string_view names[] = {"format"};
             JINJA_TRY(auto args, args_bind(std::move(a), names, 1, "strftime_now"));
             JINJA_TRY(const std::string format, str_arg(args[0], "strftime_now() format"));
             const std::time_t t = std::chrono::system_clock::to_time_t(in.now());
             std::tm tm{};
             gmtime_r(&t, &tm);
             std::string buf(format.size() * 8 + 64, '\0');
             const std::size_t n = format.empty() ? 0 : std::strftime(buf.data(), buf.size(), format.c_str(), &tm);
             buf.resize(n);
             return buf;
           }));
}

}  // namespace pagedserve::jinja
