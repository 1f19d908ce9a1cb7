#include "grammar/json_schema_compiler.hpp"

#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>
#include <vector>

#include "grammar/grammar.hpp"
#include "grammar/integer_range.hpp"
#include "grammar/regex_compiler.hpp"

namespace pagedserve::grammar {

namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;
using simdjson::dom::object;

// Validation keywords this compiler does not implement: refusing them keeps every output valid.
const std::set<std::string, std::less<>> unsupported_keywords = {
    "not", "if", "then", "else", "patternProperties", "propertyNames", "minProperties", "maxProperties",
    "dependentRequired", "dependentSchemas", "dependencies", "uniqueItems", "contains", "minContains",
    "maxContains", "unevaluatedProperties", "unevaluatedItems", "multipleOf", "additionalItems",
    "$dynamicRef", "$recursiveRef", "contentEncoding", "contentMediaType"};

struct compile_error {
  std::string message;
};

// The schema a local $ref names (followed a few hops), else the schema itself.
element dereferenced(element root, element s) {
  for (int hop = 0; hop < 8 && s.type() == element_type::OBJECT; ++hop) {
    auto ref = s.get_object().at_key("$ref");
    if (ref.error() || !ref.value().is_string()) return s;
    const std::string_view target = ref.value();
    if (target == "#") return root;
    simdjson::simdjson_result<element> def = simdjson::INCORRECT_TYPE;
    for (const auto& [prefix, container] : {std::pair{"#/$defs/", "$defs"}, std::pair{"#/definitions/", "definitions"}})
      if (target.starts_with(prefix)) def = root.at_key(container).at_key(target.substr(std::string_view(prefix).size()));
    if (def.error()) return s;
    s = def.value();
  }
  return s;
}

// The JSON types a schema's "type" allows ("integer" counted as "number", which contains it); empty
// when it says none, so nothing is known.
std::set<std::string> types_of(element s) {
  std::set<std::string> out;
  if (s.type() != element_type::OBJECT) return out;
  auto t = s.get_object().at_key("type");
  if (t.error()) return out;
  auto add = [&](element v) {
    if (v.is_string()) out.insert(std::string_view(v) == "integer" ? "number" : std::string(std::string_view(v)));
  };
  if (t.value().is_array()) {
    for (element v : t.value().get_array()) add(v);
  } else {
    add(t.value());
  }
  return out;
}

// The values a required property of object schema s is fixed to by const/enum (minified), if it is.
std::optional<std::set<std::string>> fixed_values_of(element s, std::string_view property) {
  if (s.type() != element_type::OBJECT) return std::nullopt;
  bool required = false;
  if (auto r = s.get_object().at_key("required"); !r.error() && r.value().is_array())
    for (element v : r.value().get_array()) required |= v.is_string() && std::string_view(v) == property;
  auto p = s.get_object().at_key("properties").at_key(property);
  if (!required || p.error() || p.value().type() != element_type::OBJECT) return std::nullopt;
  std::set<std::string> values;
  if (auto c = p.value().get_object().at_key("const"); !c.error()) values.insert(simdjson::minify(c.value()));
  if (auto e = p.value().get_object().at_key("enum"); !e.error() && e.value().is_array())
    for (element v : e.value().get_array()) values.insert(simdjson::minify(v));
  if (values.empty()) return std::nullopt;
  return values;
}

bool pairwise_disjoint(const std::vector<std::set<std::string>>& sets) {
  std::set<std::string> seen;
  for (const auto& s : sets)
    for (const std::string& v : s)
      if (!seen.insert(v).second) return false;
  return true;
}

// Whether no value can match two alternatives of a oneOf, so that generating any one of them (as
// for anyOf) always yields a valid value: the alternatives allow disjoint types, or one property is
// required by all of them and fixed by const/enum to disjoint values (a discriminated union).
bool alternatives_exclusive(element root, simdjson::dom::array alternatives) {
  std::vector<element> alts;
  for (element a : alternatives) alts.push_back(dereferenced(root, a));
  if (alts.size() < 2) return true;
  std::vector<std::set<std::string>> types;
  for (element a : alts) types.push_back(types_of(a));
  if (std::ranges::none_of(types, &std::set<std::string>::empty) && pairwise_disjoint(types)) return true;
  if (alts[0].type() != element_type::OBJECT) return false;
  auto props = alts[0].get_object().at_key("properties");
  if (props.error() || props.value().type() != element_type::OBJECT) return false;
  for (auto field : props.value().get_object()) {
    std::vector<std::set<std::string>> values;
    for (element a : alts) {
      auto v = fixed_values_of(a, field.key);
      if (!v) break;
      values.push_back(std::move(*v));
    }
    if (values.size() == alts.size() && pairwise_disjoint(values)) return true;
  }
  return false;
}

class schema_compiler {
 public:
  explicit schema_compiler(element root) : root_(root) {}

  std::string compile() {
    const std::string value = visit(root_, "root-value", 0);
    return "root ::= " + value + "\n" + rules_text_ + json_gbnf_rules();
  }

 private:
  std::string define(const std::string& hint, const std::string& body) {
    std::string name;
    for (char c : hint) name += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    if (name.empty() || !std::isalpha(static_cast<unsigned char>(name[0]))) name = "r-" + name;
    const std::string base = name;
    for (int n = 1; names_.contains(name); ++n) name = base + "-" + std::to_string(n);
    names_.insert(name);
    rules_text_ += name + " ::= " + body + "\n";
    return name;
  }

  static std::string literal_of(element value) { return gbnf_literal(simdjson::minify(value)); }

  std::string visit(element schema, const std::string& hint, int depth) {
    if (depth > 64) throw compile_error{"schema nested too deep"};
    if (schema.type() == element_type::BOOL) {
      if (!bool(schema)) throw compile_error{"schema 'false' matches nothing"};
      return "json-value";
    }
    if (schema.type() != element_type::OBJECT) throw compile_error{"a schema must be an object or a boolean"};
    const object o = schema;
    for (auto [key, value] : o)
      if (unsupported_keywords.contains(key)) throw compile_error{"unsupported JSON schema keyword '" + std::string(key) + "'"};

    std::string value = visit_kind(o, hint, depth);
    bool nullable = false;
    if (auto n = o["nullable"]; !n.error() && n.value().is_bool()) nullable = bool(n.value());
    return nullable ? "(" + value + " | json-null)" : value;
  }

  std::string visit_kind(const object& o, const std::string& hint, int depth) {
    if (auto ref = o["$ref"]; !ref.error()) return visit_ref(ref.value(), depth);
    if (auto c = o["const"]; !c.error()) return literal_of(c.value());
    if (auto e = o["enum"]; !e.error()) {
      if (!e.value().is_array()) throw compile_error{"'enum' must be an array"};
      std::string alts;
      for (element v : e.value().get_array()) alts += (alts.empty() ? "" : " | ") + literal_of(v);
      if (alts.empty()) throw compile_error{"'enum' is empty"};
      return "(" + alts + ")";
    }
    for (const char* key : {"anyOf", "oneOf"})
      if (auto any = o[key]; !any.error()) {
        if (!any.value().is_array()) throw compile_error{std::string("'") + key + "' must be an array"};
        if (std::string_view(key) == "oneOf" && !alternatives_exclusive(root_, any.value().get_array()))
          throw compile_error{"'oneOf' whose alternatives may overlap (a value matching two is invalid) is not "
                              "supported: use 'anyOf', or alternatives of different types or with a required "
                              "const/enum property telling them apart"};
        std::string alts;
        int i = 0;
        for (element sub : any.value().get_array())
          alts += (alts.empty() ? "" : " | ") + visit(sub, hint + "-" + std::to_string(i++), depth + 1);
        if (alts.empty()) throw compile_error{std::string("'") + key + "' is empty"};
        return "(" + alts + ")";
      }
    if (auto all = o["allOf"]; !all.error()) return visit_all_of(o, all.value(), hint, depth);

    std::vector<std::string> types;
    if (auto t = o["type"]; !t.error()) {
      if (t.value().is_string()) {
        types.emplace_back(std::string_view(t.value()));
      } else if (t.value().is_array()) {
        for (element v : t.value().get_array()) {
          if (!v.is_string()) throw compile_error{"'type' must hold strings"};
          types.emplace_back(std::string_view(v));
        }
      } else {
        throw compile_error{"'type' must be a string or an array of strings"};
      }
    } else if (has(o, "properties") || has(o, "additionalProperties") || has(o, "required")) {
      types = {"object"};
    } else if (has(o, "items") || has(o, "prefixItems")) {
      types = {"array"};
    } else if (has(o, "minLength") || has(o, "maxLength") || has(o, "pattern") || has(o, "format")) {
      types = {"string"};
    } else {
      return "json-value";
    }
    std::string alts;
    for (const std::string& type : types) alts += (alts.empty() ? "" : " | ") + visit_type(o, type, hint, depth);
    return types.size() == 1 ? alts : "(" + alts + ")";
  }

  static bool has(const object& o, std::string_view key) { return !o[key].error(); }

  std::string visit_type(const object& o, const std::string& type, const std::string& hint, int depth) {
    if (type == "object") return visit_object(o, hint, depth);
    if (type == "array") return visit_array(o, hint, depth);
    if (type == "string") return visit_string(o, hint);
    if (type == "integer") return visit_integer(o, hint);
    if (type == "number") return visit_number(o);
    if (type == "boolean") return "json-bool";
    if (type == "null") return "json-null";
    throw compile_error{"unknown type '" + type + "'"};
  }

  std::string visit_ref(element ref, int depth) {
    if (!ref.is_string()) throw compile_error{"'$ref' must be a string"};
    const std::string_view target = ref;
    if (target == "#") return "root";
    std::string_view section;
    for (std::string_view prefix : {"#/$defs/", "#/definitions/"})
      if (target.starts_with(prefix)) section = prefix;
    if (section.empty()) throw compile_error{"unsupported '$ref' '" + std::string(target) + "' (only #/$defs/... and #/definitions/...)"};
    if (auto it = refs_.find(std::string(target)); it != refs_.end()) return it->second;
    const std::string name = std::string(target.substr(section.size()));
    const std::string container = section == "#/$defs/" ? "$defs" : "definitions";
    auto def = root_.at_key(container).at_key(name);
    if (def.error()) throw compile_error{"'$ref' '" + std::string(target) + "' names no definition"};
    // The rule's name is fixed before its body is compiled, so a recursive schema refers to itself.
    std::string rule = "def-";
    for (char c : name) rule += std::isalnum(static_cast<unsigned char>(c)) ? c : '-';
    while (names_.contains(rule)) rule += "-x";
    names_.insert(rule);
    refs_.emplace(std::string(target), rule);
    const std::string body = visit(def.value(), rule + "-value", depth + 1);
    rules_text_ += rule + " ::= " + body + "\n";
    return rule;
  }

  // allOf of object schemas: their properties and required lists merged.
  std::string visit_all_of(const object& o, element all, const std::string& hint, int depth) {
    if (!all.is_array()) throw compile_error{"'allOf' must be an array"};
    std::vector<std::pair<std::string, element>> properties;
    std::set<std::string> required;
    std::optional<element> additional;
    auto merge = [&](const object& part) {
      if (auto p = part["properties"]; !p.error() && p.value().is_object())
        for (auto [k, v] : p.value().get_object()) properties.emplace_back(std::string(k), v);
      if (auto r = part["required"]; !r.error() && r.value().is_array())
        for (element k : r.value().get_array())
          if (k.is_string()) required.emplace(std::string_view(k));
      if (auto a = part["additionalProperties"]; !a.error()) additional = a.value();
    };
    for (element part : all.get_array()) {
      if (!part.is_object()) throw compile_error{"'allOf' is supported only for object schemas"};
      const object p = part;
      for (auto [key, value] : p)
        if (key != "properties" && key != "required" && key != "type" && key != "additionalProperties" &&
            key != "title" && key != "description")
          throw compile_error{"'allOf' is supported only for object schemas (found '" + std::string(key) + "')"};
      merge(p);
    }
    merge(o);
    return object_rule(properties, required, additional, hint, depth);
  }

  std::string visit_object(const object& o, const std::string& hint, int depth) {
    std::vector<std::pair<std::string, element>> properties;
    std::set<std::string> required;
    std::optional<element> additional;
    if (auto p = o["properties"]; !p.error()) {
      if (!p.value().is_object()) throw compile_error{"'properties' must be an object"};
      for (auto [k, v] : p.value().get_object()) properties.emplace_back(std::string(k), v);
    }
    if (auto r = o["required"]; !r.error()) {
      if (!r.value().is_array()) throw compile_error{"'required' must be an array"};
      for (element k : r.value().get_array())
        if (k.is_string()) required.emplace(std::string_view(k));
    }
    if (auto a = o["additionalProperties"]; !a.error()) additional = a.value();
    return object_rule(properties, required, additional, hint, depth);
  }

  // Required properties first, then the optional ones in order, then additional ones; each suffix
  // of that list has two rules, "a comma comes first" (after) and "nothing emitted yet" (start).
  std::string object_rule(const std::vector<std::pair<std::string, element>>& properties,
                          const std::set<std::string>& required, std::optional<element> additional,
                          const std::string& hint, int depth) {
    struct item {
      std::string kv;
      bool optional;
      bool repeated;
    };
    std::vector<item> items;
    for (const auto& name : required)
      if (std::none_of(properties.begin(), properties.end(), [&](const auto& p) { return p.first == name; }))
        items.push_back({gbnf_literal("\"" + name + "\"") + " ws \":\" ws json-value ws", false, false});
    for (bool want_required : {true, false})
      for (const auto& [name, schema] : properties) {
        if (required.contains(name) != want_required) continue;
        const std::string value = visit(schema, hint + "-" + name, depth + 1);
        items.push_back({gbnf_literal(json_quoted(name)) + " ws \":\" ws " + value + " ws", !want_required, false});
      }
    const bool open = !additional || !(additional->is_bool() && !bool(*additional));
    if (open) {
      const std::string value = additional && additional->is_object() ? visit(*additional, hint + "-additional", depth + 1)
                                                                      : "json-value";
      std::vector<std::string> declared;
      for (const auto& [name, schema] : properties) declared.push_back(name);
      for (const auto& name : required) declared.push_back(name);
      items.push_back({key_other_than(declared, hint) + " ws \":\" ws " + value + " ws", true, true});
    }
    std::string after = "\"\"", start = "\"\"";
    for (std::size_t k = items.size(); k-- > 0;) {
      const item& it = items[k];
      const std::string next_after = define(hint + "-after", after == "\"\"" ? "\"\"" : after);
      const std::string next_start = define(hint + "-start", start == "\"\"" ? "\"\"" : start);
      if (it.repeated) {
        after = "(\",\" ws " + it.kv + ")* " + next_after;
        start = "(" + it.kv + " (\",\" ws " + it.kv + ")* " + next_after + ") | " + next_start;
      } else if (it.optional) {
        after = "(\",\" ws " + it.kv + ")? " + next_after;
        start = "(" + it.kv + " " + next_after + ") | " + next_start;
      } else {
        after = "\",\" ws " + it.kv + " " + next_after;
        start = it.kv + " " + next_after;
      }
    }
    return define(hint, "\"{\" ws (" + start + ") \"}\"");
  }

  // A JSON string that is none of `names`, so an additional property never repeats a declared one
  // (llama.cpp's construction): a trie of the names, each node ending the string only where no name
  // ends, or leaving the trie on any other character. Keys written this way use no escapes, so
  // text equality is key equality. Names that would need escapes fall back to any string.
  std::string key_other_than(const std::vector<std::string>& names, const std::string& hint) {
    if (names.empty()) return "json-string";
    for (const std::string& name : names)
      for (char c : name)
        if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7F || c == '"' || c == '\\')
          return "json-string";
    struct trie_node {
      std::map<char, int> children;
      bool is_name = false;
    };
    std::vector<trie_node> trie(1);
    for (const std::string& name : names) {
      int at = 0;
      for (char c : name) {
        auto it = trie[at].children.find(c);
        if (it == trie[at].children.end()) {
          trie.emplace_back();
          it = trie[at].children.emplace(c, static_cast<int>(trie.size()) - 1).first;
        }
        at = it->second;
      }
      trie[at].is_name = true;
    }
    auto rule_for = [&](auto& self, int at) -> std::string {
      std::string body, excluded;
      for (const auto& [c, child] : trie[at].children) {
        body += (body.empty() ? "" : " | ") + gbnf_literal(std::string(1, c)) + " " + self(self, child);
        char hex[8];
        std::snprintf(hex, sizeof hex, "\\x%02X", static_cast<unsigned char>(c));
        excluded += hex;
      }
      if (!trie[at].is_name) body += (body.empty() ? "" : " | ") + std::string("\"\\\"\"");
      body += (body.empty() ? "" : " | ") + std::string("[^\"\\\\\\x00-\\x1F\\x7F") + excluded +
              "] json-plain-char* \"\\\"\"";
      return define(hint + "-key", body);
    };
    return "(\"\\\"\" " + rule_for(rule_for, 0) + ")";
  }

  static std::string json_quoted(const std::string& name) {
    std::string s = "\"";
    for (char c : name) {
      if (c == '"' || c == '\\') s += '\\';
      s += c;
    }
    return s + "\"";
  }

  static std::optional<long long> integer_keyword(const object& o, std::string_view key) {
    auto v = o[key];
    if (v.error()) return std::nullopt;
    double d = 0;
    if (v.value().is_int64()) return std::int64_t(v.value());
    if (v.value().is_uint64()) return static_cast<long long>(std::min<std::uint64_t>(std::uint64_t(v.value()), 1ULL << 62));
    if (v.value().is_double()) {
      d = double(v.value());
      return static_cast<long long>(key.starts_with("min") || key == "exclusiveMinimum" ? std::ceil(d) : std::floor(d));
    }
    throw compile_error{"'" + std::string(key) + "' must be a number"};
  }

  std::string visit_array(const object& o, const std::string& hint, int depth) {
    std::vector<std::string> prefix;
    if (auto p = o["prefixItems"]; !p.error()) {
      if (!p.value().is_array()) throw compile_error{"'prefixItems' must be an array"};
      int i = 0;
      for (element sub : p.value().get_array()) prefix.push_back(visit(sub, hint + "-" + std::to_string(i++), depth + 1));
    }
    std::optional<std::string> item = "json-value";
    if (auto it = o["items"]; !it.error()) {
      if (it.value().is_bool() && !bool(it.value()))
        item.reset();
      else if (it.value().is_array())
        throw compile_error{"unsupported JSON schema keyword 'items' as an array (use prefixItems)"};
      else
        item = visit(it.value(), hint + "-item", depth + 1);
    }
    const long long min_items = integer_keyword(o, "minItems").value_or(0);
    const std::optional<long long> max_items = integer_keyword(o, "maxItems");
    if (max_items && *max_items > max_repetition) throw compile_error{"'maxItems' above " + std::to_string(max_repetition)};
    if (min_items > max_repetition) throw compile_error{"'minItems' above " + std::to_string(max_repetition)};
    // Prefix items, as many as the bounds allow (all of them when minItems asks), then the rest.
    std::vector<std::string> elements;
    const long long n_prefix = static_cast<long long>(prefix.size());
    const long long prefix_used = max_items ? std::min(n_prefix, *max_items) : n_prefix;
    if (min_items > n_prefix && !item) throw compile_error{"'minItems' larger than the prefixItems allowed"};
    std::string body;
    // Every prefix item is emitted (a shorter array is valid too, but one form is enough).
    for (long long i = 0; i < prefix_used; ++i) body += (i ? " \",\" ws " : " ") + prefix[i] + " ws";
    if (item) {
      const long long rest_min = std::max(0LL, min_items - prefix_used);
      const std::optional<long long> rest_max = max_items ? std::optional(*max_items - prefix_used) : std::nullopt;
      if (!rest_max || *rest_max > 0) {
        const std::string sep = prefix_used > 0 ? "\",\" ws " : "";
        const std::string more = "(\",\" ws " + *item + " ws)";
        const std::string reps = "{" + std::to_string(std::max(0LL, rest_min - 1)) + "," +
                                 (rest_max ? std::to_string(*rest_max - 1) : "") + "}";
        const std::string tail = sep + *item + " ws " + more + reps;
        body += rest_min > 0 ? " " + tail : " (" + tail + ")?";
      }
    }
    return define(hint, "\"[\" ws" + body + " \"]\"");
  }

  std::string visit_string(const object& o, const std::string& hint) {
    if (auto p = o["pattern"]; !p.error()) {
      if (!p.value().is_string()) throw compile_error{"'pattern' must be a string"};
      if (has(o, "minLength") || has(o, "maxLength")) throw compile_error{"'pattern' with 'minLength'/'maxLength' is not supported"};
      auto expr = regex_to_gbnf(std::string_view(p.value()), true);
      if (!expr) throw compile_error{"'pattern': " + expr.error()};
      return define(hint, "\"\\\"\" " + *expr + " \"\\\"\"");
    }
    if (auto f = o["format"]; !f.error()) {
      const std::string_view format = f.value().is_string() ? std::string_view(f.value()) : "";
      static const std::string date = "[0-9]{4} \"-\" (\"0\" [1-9] | \"1\" [0-2]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01])";
      static const std::string time =
          "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,6})? (\"Z\" | [+-] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])";
      std::string body;
      if (format == "date") body = date;
      else if (format == "time") body = time;
      else if (format == "date-time") body = date + " \"T\" " + time;
      else if (format == "uuid") body = "[0-9a-f]{8} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{4} \"-\" [0-9a-f]{12}";
      else throw compile_error{"unsupported JSON schema format '" + std::string(format) + "'"};
      return define(hint, "\"\\\"\" " + body + " \"\\\"\"");
    }
    const long long min = integer_keyword(o, "minLength").value_or(0);
    const std::optional<long long> max = integer_keyword(o, "maxLength");
    if (min > max_repetition || (max && *max > max_repetition))
      throw compile_error{"string length bounds above " + std::to_string(max_repetition)};
    if (min == 0 && !max) return "json-string";
    return define(hint, "\"\\\"\" json-char{" + std::to_string(min) + "," + (max ? std::to_string(*max) : "") + "} \"\\\"\"");
  }

  std::string visit_integer(const object& o, const std::string& hint) {
    std::optional<long long> lo = integer_keyword(o, "minimum"), hi = integer_keyword(o, "maximum");
    if (auto x = integer_keyword(o, "exclusiveMinimum")) lo = std::max(lo.value_or(*x + 1), *x + 1);
    if (auto x = integer_keyword(o, "exclusiveMaximum")) hi = std::min(hi.value_or(*x - 1), *x - 1);
    if (!lo && !hi) return "json-int";
    auto body = integer_range_gbnf(lo, hi);
    if (!body) throw compile_error{body.error()};
    return define(hint, *body);
  }

  std::string visit_number(const object& o) {
    for (const char* key : {"exclusiveMinimum", "exclusiveMaximum"})
      if (has(o, key)) throw compile_error{std::string("unsupported JSON schema keyword '") + key + "' for numbers"};
    auto bound = [&](const char* key) -> std::optional<double> {
      auto v = o[key];
      if (v.error()) return std::nullopt;
      if (!v.value().is_number()) throw compile_error{std::string("'") + key + "' must be a number"};
      return v.value().is_double() ? double(v.value()) : v.value().is_int64() ? double(std::int64_t(v.value())) : double(std::uint64_t(v.value()));
    };
    const auto lo = bound("minimum"), hi = bound("maximum");
    if (lo && hi && *lo > *hi) throw compile_error{"'minimum' above 'maximum'"};
    // Only the sign is expressible: minimum 0 (no minus sign) or maximum 0 (a minus sign or zero).
    if (lo && *lo != 0) throw compile_error{"unsupported JSON schema keyword 'minimum' for numbers other than 0 (use integer)"};
    if (hi && *hi != 0) throw compile_error{"unsupported JSON schema keyword 'maximum' for numbers other than 0 (use integer)"};
    if (lo && hi) return "\"0\"";
    if (lo) return "json-unsigned-number";
    if (hi) return "(\"-\" json-unsigned-number | \"0\")";
    return "json-number";
  }

  element root_;
  std::string rules_text_;
  std::set<std::string> names_ = {"root", "ws", "json-value", "json-object", "json-array", "json-string",
                                  "json-char", "json-plain-char", "json-number", "json-unsigned-number", "json-int", "json-bool", "json-null"};
  std::map<std::string, std::string> refs_;  // $ref target -> rule
};

}  // namespace

std::string json_gbnf_rules() {
  return R"(ws ::= (" " | "\n" [ \t]{0,16})?
json-value ::= json-object | json-array | json-string | json-number | json-bool | json-null
json-object ::= "{" ws (json-string ws ":" ws json-value ws ("," ws json-string ws ":" ws json-value ws)*)? "}"
json-array ::= "[" ws (json-value ws ("," ws json-value ws)*)? "]"
json-string ::= "\"" json-char* "\""
json-char ::= json-plain-char | "\\" (["\\/bfnrt] | "u" [0-7] [0-9a-fA-F]{3})
json-plain-char ::= [^"\\\x00-\x1F\x7F]
json-number ::= "-"? json-unsigned-number
json-unsigned-number ::= ("0" | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?
json-int ::= "-"? ("0" | [1-9] [0-9]{0,15})
json-bool ::= "true" | "false"
json-null ::= "null"
)";
}

std::expected<std::string, std::string> json_schema_to_gbnf(std::string_view schema_json) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.parse(schema_json.data(), schema_json.size()).get(root))
    return std::unexpected(std::string("the schema is not valid JSON: ") + simdjson::error_message(err));
  try {
    return schema_compiler(root).compile();
  } catch (const compile_error& e) {
    return std::unexpected(e.message);
  } catch (const simdjson::simdjson_error& e) {  // a value of an unexpected type somewhere
    return std::unexpected(std::string("the schema has a value of the wrong type: ") + e.what());
  }
}

}  // namespace pagedserve::grammar
