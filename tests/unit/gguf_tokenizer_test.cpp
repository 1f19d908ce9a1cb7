// Tokenizers embedded in GGUF files: the test converts the real tokenizer.json files of
// the tokenizer.json files (test::tokenizer_dir) into GGUF tokenizer metadata the way llama.cpp's converter does
// (gpt2: tokens + merges + token types + pre-tokenizer name; llama: SentencePiece tokens + scores +
// token types), loads them through tokenizer_load_any, and checks every golden case of
// the tokenizers.json goldens.
#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <fstream>
#include <map>

#include "model/gguf_model.hpp"
#include "model/gguf_writer.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

std::vector<token_id> json_ids(simdjson::dom::element arr) {
  std::vector<token_id> ids;
  for (simdjson::dom::element v : arr.get_array()) ids.push_back(static_cast<token_id>(v.get_int64().value()));
  return ids;
}

// llama.cpp token types.
constexpr std::int32_t normal = 1, unknown = 2, control = 3, user_defined = 4, byte = 6;

// tokenizer.json (+ tokenizer_config.json) -> GGUF tokenizer metadata, as convert_hf_to_gguf.py would.
void add_tokenizer_from_json(gguf_writer& w, const fs::path& dir, const std::string& pre) {
  simdjson::dom::parser parser, cfg_parser;
  simdjson::dom::element root = parser.load((dir / "tokenizer.json").string()).value();
  // transformers writes model_max_length as int(1e30), past simdjson's 64-bit integers: make it a float.
  std::ifstream in(dir / "tokenizer_config.json");
  std::string cfg_text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (const auto big = cfg_text.find("1000000000000000019884624838656"); big != std::string::npos)
    cfg_text.replace(big, 31, "1e30");
  simdjson::dom::element cfg = cfg_parser.parse(cfg_text).value();
  simdjson::dom::element model = root["model"].value();
  std::vector<std::string> tokens;
  std::vector<std::int32_t> types;
  std::map<std::string, int> ids;
  for (auto [key, value] : model["vocab"].get_object()) {
    const auto id = static_cast<std::size_t>(value.get_int64().value());
    if (id >= tokens.size()) tokens.resize(id + 1), types.resize(id + 1, normal);
    tokens[id] = std::string(key);
    ids[std::string(key)] = static_cast<int>(id);
  }
  for (simdjson::dom::element a : root["added_tokens"].get_array()) {
    const auto id = static_cast<std::size_t>(a["id"].get_int64().value());
    if (id >= tokens.size()) tokens.resize(id + 1), types.resize(id + 1, normal);
    tokens[id] = std::string(a["content"].get_string().value());
    types[id] = a["special"].get_bool().value() ? control : user_defined;
    ids[tokens[id]] = static_cast<int>(id);
  }
  for (std::size_t i = 0; i < tokens.size(); ++i)
    if (tokens[i].empty()) tokens[i] = "[PAD" + std::to_string(i) + "]";  // what the converter fills gaps with

  const bool spm = pre.empty();
  w.add_string("tokenizer.ggml.model", spm ? "llama" : "gpt2");
  if (!spm) w.add_string("tokenizer.ggml.pre", pre);
  std::vector<std::string> merges;
  for (simdjson::dom::element m : model["merges"].get_array()) {
    std::string_view line;
    if (m.get(line) == simdjson::SUCCESS) {
      merges.emplace_back(line);
    } else {
      merges.push_back(std::string(m.at(0).get_string().value()) + " " + std::string(m.at(1).get_string().value()));
    }
  }
  if (spm) {
    // SentencePiece stores a score per piece instead of merges: higher for pieces merged earlier.
    std::vector<float> scores(tokens.size(), -1e9f);
    for (std::size_t r = merges.size(); r-- > 0;) {
      const std::string& m = merges[r];
      const std::string joined = m.substr(0, m.find(' ')) + m.substr(m.find(' ') + 1);
      scores[ids.at(joined)] = -static_cast<float>(r);
    }
    for (std::size_t i = 0; i < tokens.size(); ++i) {
      if (tokens[i].size() == 6 && tokens[i].starts_with("<0x")) types[i] = byte;
      if (tokens[i] == "<unk>") types[i] = unknown;
    }
    w.add_f32s("tokenizer.ggml.scores", scores);
  } else {
    w.add_strings("tokenizer.ggml.merges", merges);
  }
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_i32s("tokenizer.ggml.token_type", types);
  for (const auto& [key, out] : {std::pair{"bos_token", "tokenizer.ggml.bos_token_id"},
                                 std::pair{"eos_token", "tokenizer.ggml.eos_token_id"}}) {
    std::string_view name;
    if (cfg[key].get(name) == simdjson::SUCCESS) w.add_u32(out, static_cast<std::uint32_t>(ids.at(std::string(name))));
  }
  std::string_view post_type;
  if (root["post_processor"]["type"].get(post_type) != simdjson::SUCCESS) post_type = "";
  w.add_bool("tokenizer.ggml.add_bos_token", post_type == "TemplateProcessing");
  bool cleanup = false;
  if (cfg["clean_up_tokenization_spaces"].get(cleanup) != simdjson::SUCCESS) cleanup = false;
  w.add_bool("tokenizer.ggml.clean_spaces", cleanup);
  std::string_view chat;
  if (cfg["chat_template"].get(chat) == simdjson::SUCCESS) w.add_string("tokenizer.chat_template", chat);
}

struct golden_param {
  std::string name, pre;  // pre empty: SentencePiece ("llama")
};

class gguf_tokenizer_golden : public testing::TestWithParam<golden_param> {};

TEST_P(gguf_tokenizer_golden, every_case_matches) {
  const auto& [name, pre] = GetParam();
  const fs::path dir = test::tokenizer_dir(name), golden = test::tokenizer_golden(name);
  PAGEDSERVE_REQUIRE_DATA(dir);
  PAGEDSERVE_REQUIRE_DATA(golden);
  const fs::path path = fs::temp_directory_path() / ("pagedserve_tok_" + std::to_string(::getpid()) + name + ".gguf");
  gguf_writer w;
  add_tokenizer_from_json(w, dir, pre);
  ASSERT_TRUE(w.write(path).has_value());
  auto tok = tokenizer_load_any(path, 0);
  ASSERT_TRUE(tok.has_value()) << tok.error();
  auto json_tok = hf_tokenizer_load(dir);
  ASSERT_TRUE(json_tok.has_value());
  EXPECT_EQ((*tok)->bos_id(), (*json_tok)->bos_id());
  EXPECT_EQ((*tok)->eos_id(), (*json_tok)->eos_id());

  simdjson::dom::parser parser;
  simdjson::dom::element spec = parser.load(golden.string()).value()["tokenizers"][name].value();
  int n_cases = 0;
  for (simdjson::dom::element c : spec["cases"].get_array()) {
    const std::string text(c["text"].get_string().value());
    SCOPED_TRACE(name + " text: " + text);
    const std::vector<token_id> ids = json_ids(c["ids"].value());
    EXPECT_EQ((*tok)->encode(text, false), ids);
    simdjson::dom::element with;
    EXPECT_EQ((*tok)->encode_with_special_tokens(text),
              c["ids_with_special_tokens"].get(with) == simdjson::SUCCESS ? json_ids(with) : ids);
    EXPECT_EQ((*tok)->decode(ids, false), std::string(c["decoded"].get_string().value()));
    ++n_cases;
  }
  EXPECT_EQ(n_cases, 30);
  simdjson::dom::array chats;
  if (spec["chat"].get(chats) == simdjson::SUCCESS) {
    for (simdjson::dom::element c : chats)
      EXPECT_EQ((*tok)->encode(std::string(c["rendered"].get_string().value()), false), json_ids(c["rendered_ids"].value()));
  }

  auto file = gguf_file::open(path);
  ASSERT_TRUE(file.has_value());
  EXPECT_EQ(gguf_chat_template(*file).has_value(), name != "llama2");
  fs::remove(path);
}

INSTANTIATE_TEST_SUITE_P(gguf, gguf_tokenizer_golden,
                         testing::Values(golden_param{"qwen3", "qwen2"}, golden_param{"llama3", "llama-bpe"},
                                         golden_param{"llama2", ""}),
                         [](const testing::TestParamInfo<golden_param>& info) { return info.param.name; });

TEST(gguf_tokenizer, errors_name_the_problem) {
  const fs::path path = fs::temp_directory_path() / ("pagedserve_tok_bad_" + std::to_string(::getpid()) + ".gguf");
  {
    gguf_writer w;
    w.add_string("tokenizer.ggml.model", "bert");
    ASSERT_TRUE(w.write(path).has_value());
    auto t = tokenizer_load_any(path, 0);
    ASSERT_FALSE(t.has_value());
    EXPECT_NE(t.error().find("'bert' is not supported"), std::string::npos) << t.error();
  }
  {
    gguf_writer w;
    w.add_string("tokenizer.ggml.model", "gpt2");
    const std::vector<std::string> tokens = {"a", "b"}, merges = {"a b"};  // "ab" is not a token
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_strings("tokenizer.ggml.merges", merges);
    ASSERT_TRUE(w.write(path).has_value());
    auto t = tokenizer_load_any(path, 0);
    ASSERT_FALSE(t.has_value());
    EXPECT_NE(t.error().find("missing from the vocabulary"), std::string::npos) << t.error();
  }
  {
    gguf_writer w;
    w.add_string("tokenizer.ggml.model", "llama");
    ASSERT_TRUE(w.write(path).has_value());
    auto t = tokenizer_load_any(path, 0);
    ASSERT_FALSE(t.has_value());
    EXPECT_NE(t.error().find("missing metadata 'tokenizer.ggml.tokens'"), std::string::npos) << t.error();
  }
  fs::remove(path);
}

}  // namespace
}  // namespace pagedserve
