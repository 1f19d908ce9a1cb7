#pragma once
// Reads tests/data/golden/stories260K.json into plain structs for the model tests.
#include <simdjson.h>

#include <string>
#include <vector>

#include "support/test_paths.hpp"

namespace pagedserve::test {

struct golden_position {
  int pos = 0, input_token = 0, argmax = 0;
  double max_logit = 0;
  std::vector<double> logits_0_7;
};

struct golden_case {
  std::string prompt;
  int steps = 0;
  std::vector<int> prompt_ids, generated_ids;
  int n_generated = 0;
  bool stopped_on_bos = false;
  std::string generated_text;
  std::vector<golden_position> first_positions;
};

inline std::vector<int> golden_ints(simdjson::dom::element e) {
  std::vector<int> out;
  for (auto v : e.get_array()) out.push_back(static_cast<int>(int64_t(v)));
  return out;
}

// Empty when the golden file is absent.
inline std::vector<golden_case> golden_stories260k() {
  std::vector<golden_case> cases;
  const auto path = data_file("golden/stories260K.json");
  if (path.empty()) return cases;
  static simdjson::dom::parser parser;
  simdjson::dom::element root = parser.load(path.string());
  for (auto c : root["cases"].get_array()) {
    golden_case g;
    g.prompt = std::string(std::string_view(c["prompt"]));
    g.steps = static_cast<int>(int64_t(c["steps"]));
    g.prompt_ids = golden_ints(c["prompt_ids"]);
    g.generated_ids = golden_ints(c["generated_ids"]);
    g.n_generated = static_cast<int>(int64_t(c["n_generated"]));
    g.stopped_on_bos = bool(c["stopped_on_bos"]);
    g.generated_text = std::string(std::string_view(c["generated_text"]));
    simdjson::dom::element fp;
    if (c["first_positions"].get(fp) == simdjson::SUCCESS)
      for (auto p : fp.get_array()) {
        golden_position gp;
        gp.pos = static_cast<int>(int64_t(p["pos"]));
        gp.input_token = static_cast<int>(int64_t(p["input_token"]));
        gp.argmax = static_cast<int>(int64_t(p["argmax"]));
        gp.max_logit = double(p["max_logit"]);
        for (auto v : p["logits_0_7"].get_array()) gp.logits_0_7.push_back(double(v));
        g.first_positions.push_back(std::move(gp));
      }
    cases.push_back(std::move(g));
  }
  return cases;
}

}  // namespace pagedserve::test
