#include <simdjson.h>

#include "pagedserve/config.hpp"

namespace pagedserve {

speculative_config speculative_config_parse(std::string_view json, std::vector<std::string>& errors) {
  speculative_config c;
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  simdjson::dom::object obj;
  if (parser.parse(simdjson::padded_string(json)).get(root) != simdjson::SUCCESS || root.get(obj) != simdjson::SUCCESS) {
    errors.push_back("speculative_config must be a JSON object");
    return c;
  }
  bool has_method = false;
  for (auto [key, value] : obj) {
    const std::string where = "speculative_config." + std::string(key);
    auto read_int = [&](int& out) {
      std::int64_t v;
      if (value.get(v) == simdjson::SUCCESS) out = static_cast<int>(v);
      else errors.push_back(where + " must be an integer");
    };
    auto read_string = [&](std::string& out) {
      std::string_view v;
      if (value.get(v) == simdjson::SUCCESS) out = std::string(v);
      else errors.push_back(where + " must be a string");
    };
    if (key == "method") {
      read_string(c.method);
      has_method = true;
    } else if (key == "num_speculative_tokens") read_int(c.num_speculative_tokens);
    else if (key == "prompt_lookup_max") read_int(c.prompt_lookup_max);
    else if (key == "prompt_lookup_min") read_int(c.prompt_lookup_min);
    else if (key == "model") read_string(c.model);
    else if (key == "max_batch_rows") read_int(c.max_batch_rows);
    else errors.push_back("unknown config key " + where);
  }
  // vLLM's inference of the method: a model means a draft model, proposals alone n-gram lookup.
  if (!has_method) c.method = !c.model.empty() ? "draft_model" : c.num_speculative_tokens > 0 ? "ngram" : "";
  return c;
}

}  // namespace pagedserve
