// The done-when property of structured output: for random JSON schemas and random-weight models
// (which emit garbage unless masked), every constrained output, greedy and at temperature 1, parses
// and validates against its schema under an independent validator (python3-jsonschema, one batch
// call). The models are random-weight Llamas over each tokenizer's vocabulary, run by the real
// forward pass, sampler and token masks (generate_sequence), for both tokenizer kinds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "api/json_writer.hpp"
#include "grammar/grammar_constraint.hpp"
#include "model/generator.hpp"
#include "support/child_process.hpp"
#include "support/sanitizer_env.hpp"
#include "support/test_paths.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"
#include "unit/grammar_test_helpers.hpp"

namespace pagedserve::grammar {
namespace {

using kind = output_format::kind;

class schema_generator {
 public:
  explicit schema_generator(std::uint64_t seed) : rng_(seed) {}

  // A schema whose every value is bounded, so a constrained model must finish.
  std::string schema() {
    if (pick(8) == 0)
      return R"({"$defs":{"item":)" + value(2) + R"(},"type":"object","properties":{"first":{"$ref":"#/$defs/item"},)"
             R"("more":{"type":"array","items":{"$ref":"#/$defs/item"},"maxItems":2}},"required":["first"],"additionalProperties":false})";
    return pick(3) ? object_schema(0) : value(0);  // mostly objects, as response formats are
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(rng_); }

  std::string value(int depth) {
    switch (pick(depth < 2 ? 12 : 8)) {
      case 0: return string_schema();
      case 1: return integer_schema();
      case 2: return pick(2) ? R"({"type":"number"})" : R"({"type":"number","minimum":0})";
      case 3: return R"({"type":"boolean"})";
      case 4: return pick(2) ? R"({"type":"null"})" : R"({"type":["string","null"],"maxLength":4})";
      case 5: return R"({"enum":["red","green",3,null,true,{"k":[1,2]}]})";
      case 6: return pick(2) ? R"({"const":"fixed"})" : R"({"type":"string","format":"date"})";
      case 7: return pattern_schema();
      case 8: case 9: return object_schema(depth);
      case 10: return array_schema(depth);
      default: return R"({"anyOf":[)" + value(depth + 1) + "," + value(depth + 1) + "]}";
    }
  }

  std::string string_schema() {
    const int max = pick(9), min = pick(max + 1);
    return R"({"type":"string","minLength":)" + std::to_string(min) + R"(,"maxLength":)" + std::to_string(max) + "}";
  }

  std::string integer_schema() {
    switch (pick(4)) {
      case 0: return R"({"type":"integer"})";
      case 1: return R"({"type":"integer","minimum":)" + std::to_string(pick(2000) - 1000) + "}";
      case 2: return R"({"type":"integer","exclusiveMaximum":)" + std::to_string(pick(2000) - 1000) + "}";
      default: {
        const int lo = pick(400) - 200;
        return R"({"type":"integer","minimum":)" + std::to_string(lo) + R"(,"maximum":)" + std::to_string(lo + pick(300)) + "}";
      }
    }
  }

  std::string pattern_schema() {
    static const char* patterns[] = {R"(^[a-z]{1,5}$)", R"(^\\d{3}-\\d{2}$)", R"(^(yes|no|maybe)$)",
                                     R"(^[A-Z][a-z]{0,4}( [A-Z][a-z]{0,4})?$)", R"(^\\w{2}\\.[^\\s]{0,3}$)"};
    return R"({"type":"string","pattern":")" + std::string(patterns[pick(5)]) + "\"}";
  }

  std::string object_schema(int depth) {
    static const char* names[] = {"a", "name", "id", "x y", "value"};
    std::string properties, required;
    const int n = 1 + pick(4);
    for (int i = 0; i < n; ++i) {
      properties += std::string(i ? "," : "") + "\"" + names[i] + "\":" + value(depth + 1);
      if (pick(2)) required += std::string(required.empty() ? "" : ",") + "\"" + names[i] + "\"";
    }
    return R"({"type":"object","properties":{)" + properties + R"(},"required":[)" + required +
           R"(],"additionalProperties":false})";
  }

  std::string array_schema(int depth) {
    if (pick(3) == 0)
      return R"({"type":"array","prefixItems":[)" + value(depth + 1) + "," + value(depth + 1) + R"(],"items":false})";
    const int min = pick(3), max = min + pick(3);
    return R"({"type":"array","items":)" + value(depth + 1) + R"(,"minItems":)" + std::to_string(min) +
           R"(,"maxItems":)" + std::to_string(max) + "}";
  }

  std::mt19937_64 rng_;
};

// The output of one constrained generation by model m (the text the tokens stand for), or nullopt
// when it did not end within the model's context.
std::optional<std::string> generate(const model& m, const tokenizer& tok, const std::shared_ptr<const grammar>& g,
                                    const std::shared_ptr<const token_vocabulary>& vocab, float temperature,
                                    std::uint64_t seed) {
  sampling_params params;
  params.temperature = temperature;
  static const kernels::kernel_table* kt = kernels::kernel_table_select();
  const generation out = generate_sequence(m, tok, *kt, tok.encode("JSON:", true), params, seed, {}, 0, dtype::f32,
                                           std::make_unique<grammar_constraint>(g, vocab));
  if (!out.stopped) return std::nullopt;
  std::string text;
  for (const token_id t : out.generated)
    if (std::ranges::find(vocab->end_ids(), t) == vocab->end_ids().end()) text += vocab->bytes(t);
  return text;
}

// Generates n_schemas x {greedy, temperature 1} outputs and validates them all in one python call.
void check_property(const tokenizer& tok, int n_schemas, std::uint64_t seed) {
  // A random-weight Llama over the tokenizer's vocabulary, built in memory: it would write garbage
  // unconstrained (weights of stddev 0.5: a peaked, arbitrary next-token distribution).
  model_config c;
  c.dim = 32, c.hidden_dim = 64, c.n_layers = 1, c.n_heads = 4, c.n_kv_heads = 2;
  c.vocab_size = tok.vocab_size(), c.seq_len = 1024, c.shared_classifier = true;
  auto loaded = llama2c_model_from_floats(llama2c_random_checkpoint(c, seed, 0.5f), "random");
  ASSERT_TRUE(loaded) << loaded.error();
  auto owned = std::make_shared<model>(**loaded);
  owned->generation.eos_token_ids = {tok.eos_id()};  // llama2.c's {1, 2} are '"' and '#' in Qwen3's vocabulary
  const std::shared_ptr<const model> m = owned;
  auto vocab = std::make_shared<const token_vocabulary>(token_vocabulary_from(tok, {tok.eos_id()}));
  schema_generator schemas(seed);
  const auto path = std::filesystem::temp_directory_path() /
                    ("pagedserve_grammar_property_" + std::to_string(::getpid()) + "_" + std::to_string(seed) + ".jsonl");
  std::ofstream out(path);
  for (int i = 0; i < n_schemas; ++i) {
    const std::string schema = schemas.schema();
    auto g = compile_output_format_cached({kind::json_schema, schema, "", ""});
    ASSERT_TRUE(g) << schema << ": " << g.error();
    for (float temperature : {0.0f, 1.0f}) {
      auto text = generate(*m, tok, *g, vocab, temperature, seed * 7919 + i);
      ASSERT_TRUE(text) << "no end within the model's context: " << schema;
      std::string line = R"({"schema":)" + schema + R"(,"output":)";
      json_append_string(line, *text);
      out << line << "}\n";
    }
  }
  out.close();
  const std::string validator = R"(
import json, sys, jsonschema
bad = 0
for n, line in enumerate(open(sys.argv[1])):
    case = json.loads(line)
    try:
        jsonschema.Draft202012Validator(case["schema"]).validate(json.loads(case["output"]))
    except Exception as e:
        bad += 1
        print(f"line {n}: {case['output']!r} against {json.dumps(case['schema'])}: {str(e)[:200]}")
print(f"{bad} invalid of {n + 1}")
sys.exit(1 if bad else 0)
)";
  const auto r = e2e::run_process({"/usr/bin/env", "python3", "-c", validator, path.string()}, std::chrono::seconds(120));
  std::filesystem::remove(path);
  if (r.exited && r.exit_code != 0 && r.err.find("No module named 'jsonschema'") != std::string::npos)
    GTEST_SKIP() << "python3-jsonschema is not installed (scripts/install-deps.sh installs it)";
  EXPECT_TRUE(r.exited && r.exit_code == 0) << r.out << r.err;
}

TEST(grammar_property, random_schemas_validate_sentencepiece) {
  const auto path = test::model_file("tok512.bin");
  PAGEDSERVE_REQUIRE_DATA(path);
  auto tok = llama2c_tokenizer_load(path, 512);
  ASSERT_TRUE(tok) << tok.error();
  check_property(**tok, 1000 / test::sanitizer_case_divisor, 1);
}

TEST(grammar_property, random_schemas_validate_byte_level_bpe) {
  const auto dir = test::tokenizer_dir("qwen3");
  PAGEDSERVE_REQUIRE_DATA(dir);
  auto tok = hf_tokenizer_load(dir);
  ASSERT_TRUE(tok) << tok.error();
  check_property(**tok, 60 / test::sanitizer_case_divisor, 2);
}

}  // namespace
}  // namespace pagedserve::grammar
