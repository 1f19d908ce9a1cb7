#include "grammar/output_format_compiler.hpp"

#include <list>
#include <mutex>
#include <unordered_map>

#include "grammar/gbnf_parser.hpp"
#include "grammar/json_schema_compiler.hpp"
#include "grammar/regex_compiler.hpp"

namespace pagedserve::grammar {

namespace {

constexpr std::size_t cache_capacity = 128;

// Recently compiled grammars by their whole text; errors are not kept (they are cheap to redo).
class grammar_cache {
 public:
  std::expected<std::shared_ptr<const grammar>, std::string> get(const output_format& f) {
    std::string key = std::to_string(static_cast<int>(f.type)) + '\0' + f.spec + '\0' + f.prefix + '\0' + f.suffix;
    {
      std::lock_guard lock(mutex_);
      if (auto it = index_.find(key); it != index_.end()) {
        order_.splice(order_.begin(), order_, it->second);
        return it->second->second;
      }
    }
    auto compiled = compile_output_format(f);  // outside the lock: other requests keep going
    if (!compiled) return compiled;
    std::lock_guard lock(mutex_);
    if (index_.contains(key)) return compiled;
    order_.emplace_front(key, *compiled);
    index_.emplace(std::move(key), order_.begin());
    if (order_.size() > cache_capacity) {
      index_.erase(order_.back().first);
      order_.pop_back();
    }
    return compiled;
  }

 private:
  using entry = std::pair<std::string, std::shared_ptr<const grammar>>;
  std::mutex mutex_;
  std::list<entry> order_;  // most recent first
  std::unordered_map<std::string, std::list<entry>::iterator> index_;
};

}  // namespace

std::expected<std::shared_ptr<const grammar>, std::string> compile_output_format(const output_format& f) {
  std::expected<std::string, std::string> gbnf = std::unexpected(std::string("no output format"));
  switch (f.type) {
    case output_format::kind::none: break;
    case output_format::kind::json_object: gbnf = "root ::= json-object\n" + json_gbnf_rules(); break;
    case output_format::kind::json_schema: gbnf = json_schema_to_gbnf(f.spec); break;
    case output_format::kind::regex: {
      auto expr = regex_to_gbnf(f.spec);
      gbnf = expr ? std::expected<std::string, std::string>("root ::= " + *expr + "\n") : std::unexpected(expr.error());
      break;
    }
    case output_format::kind::grammar: gbnf = f.spec; break;
  }
  if (!gbnf) return std::unexpected(gbnf.error());
  auto g = parse_gbnf(*gbnf, f.prefix, f.suffix);
  if (!g) return std::unexpected(g.error());
  return std::make_shared<const grammar>(std::move(*g));
}

std::expected<std::shared_ptr<const grammar>, std::string> compile_output_format_cached(const output_format& f) {
  static grammar_cache cache;  // pure function results, shared by the API and the executor
  return cache.get(f);
}

}  // namespace pagedserve::grammar
