// The done-when property of structured output: for random JSON schemas and random-weight models
// (which emit garbage unless masked), every constrained output, greedy and at temperature 1, parses
// and validates against its schema under an independent validator (python3-jsonschema, one batch
// call). The models are bigram models with random weights: the next token's logits are a random
// function of the previous token, through the real sampler and token masks of both tokenizer kinds.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

#include "api/json_writer.hpp"
#include "grammar/grammar_constraint.hpp"
#include "support/child_process.hpp"
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

// A bigram model with random weights: the logits of token t after token prev are a fixed random
// function of (prev, t), spread enough that the unmasked model would emit garbage.
void random_bigram_logits(std::uint64_t model_seed, token_id prev, std::vector<float>& logits) {
  for (std::size_t t = 0; t < logits.size(); ++t) {
    std::uint64_t h = (model_seed ^ (static_cast<std::uint64_t>(prev) << 32) ^ t) * 0x9E3779B97F4A7C15ULL;
    h ^= h >> 29;
    h *= 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 32;
    logits[t] = static_cast<float>(h % 10000) / 1000.0f;  // [0, 10)
  }
}

// The output of one constrained generation (the text the tokens stand for), or empty when it did
// not finish within max_tokens.
std::optional<std::string> generate(const std::shared_ptr<const grammar>& g,
                                    const std::shared_ptr<const token_vocabulary>& vocab, float temperature,
                                    std::uint64_t seed, int max_tokens) {
  sampling_params params;
  params.temperature = temperature;
  sampler s(params, seed);
  s.constrain(std::make_unique<grammar_constraint>(g, vocab));
  std::vector<float> logits(vocab->size());
  std::string text;
  token_id prev = 0;
  for (int i = 0; i < max_tokens; ++i) {
    random_bigram_logits(seed, prev, logits);
    const token_id t = s.sample(logits.data(), static_cast<int>(logits.size()));
    if (std::ranges::find(vocab->end_ids(), t) != vocab->end_ids().end()) return text;
    text += vocab->bytes(t);
    prev = t;
  }
  return std::nullopt;
}

// Generates n_schemas x {greedy, temperature 1} outputs and validates them all in one python call.
void check_property(const tokenizer& tok, int n_schemas, std::uint64_t seed) {
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
      auto text = generate(*g, vocab, temperature, seed * 7919 + i, 4000);
      ASSERT_TRUE(text) << "no end within 4000 tokens: " << schema;
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
  check_property(**tok, 1000, 1);
}

TEST(grammar_property, random_schemas_validate_byte_level_bpe) {
  const auto dir = test::tokenizer_dir("qwen3");
  PAGEDSERVE_REQUIRE_DATA(dir);
  auto tok = hf_tokenizer_load(dir);
  ASSERT_TRUE(tok) << tok.error();
  check_property(**tok, 60, 2);
}

}  // namespace
}  // namespace pagedserve::grammar
