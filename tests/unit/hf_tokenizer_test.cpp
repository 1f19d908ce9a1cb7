// Hugging Face tokenizer.json tokenizers against the tokenizers.json goldens (qwen3, llama3,
// llama2: ids, ids with the post-processor, vocabulary strings, decode and streaming decode, chat
// prompts), small hand-written tokenizer.json files for the flags the real files do not use, and
// corrupt or missing files, each of which must be a clear error rather than a crash.
#include "tokenizer/hf_tokenizer.hpp"

#include <gtest/gtest.h>
#include <simdjson.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <random>

#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

using test::tokenizer_dir;

std::vector<token_id> json_ids(simdjson::dom::element arr) {
  std::vector<token_id> ids;
  for (simdjson::dom::element v : arr.get_array()) ids.push_back(static_cast<token_id>(v.get_int64().value()));
  return ids;
}

std::string streamed(const tokenizer& tok, const std::vector<token_id>& ids) {
  incremental_detokenizer detok(tok);
  std::string out;
  for (const token_id id : ids) out += detok.push(id);
  return out + detok.flush();
}

std::unique_ptr<tokenizer> load_timed(const fs::path& dir, const std::string& name) {
  const auto t0 = std::chrono::steady_clock::now();
  auto tok = hf_tokenizer_load(dir);
  const std::chrono::duration<double, std::milli> ms = std::chrono::steady_clock::now() - t0;
  EXPECT_TRUE(tok.has_value()) << (tok ? "" : tok.error());
  std::cout << "[ info     ] " << name << " tokenizer.json loaded in " << ms.count() << " ms\n";
  return tok ? std::move(*tok) : nullptr;
}

// ---- golden: every case of the tokenizers.json goldens ----------------------------------------

class hf_tokenizer_golden : public ::testing::TestWithParam<std::string> {};

TEST_P(hf_tokenizer_golden, every_case) {
  const std::string name = GetParam();
  const fs::path dir = tokenizer_dir(name), golden = test::tokenizer_golden(name);
  PAGEDSERVE_REQUIRE_DATA(dir);
  PAGEDSERVE_REQUIRE_DATA(golden);
  simdjson::dom::parser parser;
  simdjson::dom::element root = parser.load(golden.string()).value();
  // The conventions this test relies on: ids without special tokens, decode without skipping.
  const std::string_view ids_rule = root["conventions"]["ids"].get_string().value();
  ASSERT_NE(ids_rule.find("add_special_tokens=false"), std::string_view::npos) << ids_rule;
  const std::string_view decoded_rule = root["conventions"]["decoded"].get_string().value();
  ASSERT_NE(decoded_rule.find("skip_special_tokens=false"), std::string_view::npos) << decoded_rule;

  const auto tok = load_timed(dir, name);
  ASSERT_TRUE(tok);
  simdjson::dom::element spec = root["tokenizers"][name].value();
  int n_cases = 0;
  for (simdjson::dom::element c : spec["cases"].get_array()) {
    const std::string text(c["text"].get_string().value());
    SCOPED_TRACE(name + " text: " + text);
    const std::vector<token_id> ids = json_ids(c["ids"].value());
    EXPECT_EQ(tok->encode(text, false), ids);
    simdjson::dom::element with;
    const std::vector<token_id> want_with =
        c["ids_with_special_tokens"].get(with) == simdjson::SUCCESS ? json_ids(with) : ids;
    EXPECT_EQ(tok->encode_with_special_tokens(text), want_with);
    std::vector<std::string> tokens;
    for (simdjson::dom::element t : c["tokens"].get_array()) tokens.emplace_back(t.get_string().value());
    ASSERT_EQ(tokens.size(), ids.size());
    for (std::size_t i = 0; i < ids.size(); ++i) EXPECT_EQ(tok->token_text(ids[i]), tokens[i]) << "token " << i;
    const std::string decoded(c["decoded"].get_string().value());
    EXPECT_EQ(tok->decode(ids, false), decoded);
    std::string_view raw;  // streaming cannot see ahead, so it never applies the clean-up
    if (c["decoded_without_cleanup"].get(raw) != simdjson::SUCCESS) raw = decoded;
    EXPECT_EQ(streamed(*tok, ids), raw);
    ++n_cases;
  }
  EXPECT_EQ(n_cases, 30);
  simdjson::dom::array chats;
  if (spec["chat"].get(chats) == simdjson::SUCCESS) {
    for (simdjson::dom::element c : chats) {
      const std::string rendered(c["rendered"].get_string().value());
      EXPECT_EQ(tok->encode(rendered, false), json_ids(c["rendered_ids"].value())) << rendered;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(hf, hf_tokenizer_golden, ::testing::Values("qwen3", "llama3", "llama2"));

TEST(hf_tokenizer, qwen3_special_ids_from_config) {
  const fs::path q = tokenizer_dir("qwen3");
  PAGEDSERVE_REQUIRE_DATA(q);
  auto qwen = hf_tokenizer_load(q / "tokenizer.json");
  ASSERT_TRUE(qwen) << qwen.error();
  EXPECT_EQ((*qwen)->bos_id(), -1);
  EXPECT_EQ((*qwen)->eos_id(), 151645);
  EXPECT_EQ((*qwen)->token_to_id("<|im_start|>"), 151644);
  EXPECT_EQ((*qwen)->vocab_size(), 151669);
  EXPECT_TRUE((*qwen)->is_special(151643));
  EXPECT_FALSE((*qwen)->is_special(151667));  // <think> is added but not special
  EXPECT_EQ((*qwen)->encode("Hello world", true), (std::vector<token_id>{9707, 1879}));  // no BOS to add
  const std::vector<token_id> chat = {151644, 9707, 151645};
  EXPECT_EQ((*qwen)->decode(chat, false), "<|im_start|>Hello<|im_end|>");
  EXPECT_EQ((*qwen)->decode(chat, true), "Hello");
}

TEST(hf_tokenizer, llama3_special_ids_from_config) {
  const fs::path l3 = tokenizer_dir("llama3");
  PAGEDSERVE_REQUIRE_DATA(l3);
  auto llama3 = hf_tokenizer_load(l3);
  ASSERT_TRUE(llama3) << llama3.error();
  EXPECT_EQ((*llama3)->bos_id(), 128000);
  EXPECT_EQ((*llama3)->eos_id(), 128001);
  EXPECT_EQ((*llama3)->token_to_id("<|eot_id|>"), 128009);
  EXPECT_EQ((*llama3)->encode("Hello world", true), (std::vector<token_id>{128000, 9906, 1917}));
  const std::vector<token_id> spaced = {9906, 1174, 1917, 662};  // "Hello" " ," " world" " ."
  EXPECT_EQ((*llama3)->decode(spaced, false), "Hello, world.");  // clean_up_tokenization_spaces
  EXPECT_EQ(streamed(**llama3, spaced), "Hello , world .");
}

TEST(hf_tokenizer, llama2_special_ids_from_config) {
  const fs::path l2 = tokenizer_dir("llama2");
  PAGEDSERVE_REQUIRE_DATA(l2);
  auto llama2 = hf_tokenizer_load(l2);
  ASSERT_TRUE(llama2) << llama2.error();
  EXPECT_EQ((*llama2)->bos_id(), 1);
  EXPECT_EQ((*llama2)->eos_id(), 2);
  const std::vector<token_id> hello = (*llama2)->encode("Hello world", true);
  EXPECT_EQ(hello.front(), 1);
  // Only the first token of a sequence loses its SentencePiece space.
  EXPECT_EQ((*llama2)->decode_piece(-1, hello[1]), "Hello");
  EXPECT_EQ((*llama2)->decode_piece(hello[1], hello[2]), " world");
  EXPECT_EQ((*llama2)->decode(hello, false), "<s> Hello world");
  EXPECT_EQ((*llama2)->decode(hello, true), "Hello world");
}

TEST(hf_tokenizer, encode_speed_and_invalid_utf8) {
  const fs::path dir = tokenizer_dir("qwen3");
  PAGEDSERVE_REQUIRE_DATA(dir);
  auto tok = hf_tokenizer_load(dir);
  ASSERT_TRUE(tok) << tok.error();
  std::string text;
  while (text.size() < (1 << 20)) text += "The quick brown fox jumps over the lazy dog; café 中文 1234567. ";
  const auto t0 = std::chrono::steady_clock::now();
  const std::vector<token_id> ids = (*tok)->encode(text, false);
  const std::chrono::duration<double> s = std::chrono::steady_clock::now() - t0;
  std::cout << "[ info     ] qwen3 encoded " << text.size() / 1e6 << " MB into " << ids.size() << " tokens in "
            << s.count() * 1e3 << " ms (" << text.size() / 1e6 / s.count() << " MB/s)\n";
  EXPECT_EQ((*tok)->decode(ids, false), text);
  // Invalid UTF-8 is encoded as U+FFFD, never a crash.
  const std::vector<token_id> bad = (*tok)->encode("a\xFF\xC3 b\xE2\x82", false);
  EXPECT_EQ((*tok)->decode(bad, false), "a\xEF\xBF\xBD\xEF\xBF\xBD b\xEF\xBF\xBD");
}

// ---- small hand-written tokenizer.json files -----------------------------------------------------

class hf_tokenizer_files : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("pagedserve_hf_tok_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  fs::path write(const std::string& name, std::string_view bytes) {
    const fs::path p = dir_ / name;
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    return p;
  }

  fs::path dir_;
};

// A SentencePiece-style vocabulary: ▁ a b ab ▁ab <0x..> for 'c', plus added tokens.
std::string sp_json(std::string_view added, std::string_view extra = "") {
  std::string j = R"({"version":"1.0","added_tokens":[)" + std::string(added) + R"(],
    "normalizer":{"type":"Sequence","normalizers":[{"type":"Prepend","prepend":"▁"},
                  {"type":"Replace","pattern":{"String":" "},"content":"▁"}]},
    "pre_tokenizer":null,
    "post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>","type_id":0}},
                      {"Sequence":{"id":"A","type_id":0}}],"special_tokens":{"<s>":{"id":"<s>","ids":[1],"tokens":["<s>"]}}},
    "decoder":{"type":"Sequence","decoders":[{"type":"Replace","pattern":{"String":"▁"},"content":" "},
               {"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":" ","start":1,"stop":0}]},
    "model":{"type":"BPE","unk_token":"<unk>","byte_fallback":true,"fuse_unk":true,
             "vocab":{"<unk>":0,"<s>":1,"</s>":2,"<0x63>":3,"▁":4,"a":5,"b":6,"ab":7,"▁ab":8,"<0xC3>":9,"<0xA9>":10},
             "merges":["a b","▁ ab"]})";
  return j + std::string(extra) + "}";
}

TEST_F(hf_tokenizer_files, sentencepiece_byte_fallback_and_added_flags) {
  const std::string added =
      R"({"id":0,"content":"<unk>","special":true},{"id":1,"content":"<s>","special":true},
         {"id":2,"content":"</s>","special":true},
         {"id":11,"content":"[L]","special":true,"lstrip":true,"normalized":false},
         {"id":12,"content":"[R]","special":true,"rstrip":true,"normalized":false},
         {"id":13,"content":"[W]","special":true,"single_word":true,"normalized":false},
         {"id":14,"content":"[W]x","special":false,"normalized":false})";
  auto tok = hf_tokenizer_load(write("tokenizer.json", sp_json(added)));
  ASSERT_TRUE(tok) << tok.error();
  const tokenizer& t = **tok;
  EXPECT_EQ(t.encode("ab", false), (std::vector<token_id>{8}));
  EXPECT_EQ(t.encode_with_special_tokens("ab"), (std::vector<token_id>{1, 8}));
  EXPECT_EQ(t.encode("abc", false), (std::vector<token_id>{8, 3}));       // 'c' as a byte token
  EXPECT_EQ(t.encode("é", false), (std::vector<token_id>{4, 9, 10}));     // two byte tokens
  EXPECT_EQ(t.encode("xyz", false), (std::vector<token_id>{4, 0}));       // unknowns fused
  EXPECT_EQ(t.encode("ab  [L]", false), (std::vector<token_id>{8, 11}));  // lstrip eats the spaces
  EXPECT_EQ(t.encode("[R]  ab", false), (std::vector<token_id>{12, 8}));  // rstrip eats the spaces
  EXPECT_EQ(t.encode("a [W] b", false), (std::vector<token_id>{4, 5, 4, 13, 4, 4, 6}));
  EXPECT_EQ(t.encode("[W]x", false), (std::vector<token_id>{14}));  // longest match wins
  const std::vector<token_id> w = t.encode("a[W]", false);          // inside a word: not matched
  EXPECT_EQ(std::count(w.begin(), w.end(), 13), 0);
  EXPECT_EQ(t.decode(std::vector<token_id>{8, 3, 4, 9, 10}, false), "abc é");
  EXPECT_EQ(streamed(t, {8, 3, 4, 9, 10}), "abc é");
  EXPECT_EQ(t.decode(std::vector<token_id>{9}, false), "\xEF\xBF\xBD");  // a lone lead byte
  EXPECT_EQ(t.bos_id(), 1);  // no tokenizer_config.json: from the post-processor
  EXPECT_EQ(t.eos_id(), 2);  // and the usual name
}

TEST_F(hf_tokenizer_files, metaspace_and_byte_level_prefix_space) {
  auto meta = hf_tokenizer_load(
      write("meta.json", R"({"added_tokens":[{"id":6,"content":"<x>","special":true,"normalized":false}],
    "pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},
    "decoder":{"type":"Metaspace","replacement":"▁","prepend_scheme":"first","split":true},
    "model":{"type":"BPE","unk_token":"<unk>","vocab":{"<unk>":0,"▁":1,"a":2,"b":3,"▁a":4,"▁b":5},"merges":["▁ a","▁ b"]}})"));
  ASSERT_TRUE(meta) << meta.error();
  EXPECT_EQ((*meta)->encode("a b", false), (std::vector<token_id>{4, 5}));
  EXPECT_EQ((*meta)->encode("<x>a", false), (std::vector<token_id>{6, 2}));  // "first": only the input's start
  EXPECT_EQ((*meta)->decode(std::vector<token_id>{4, 5}, false), "a b");
  EXPECT_EQ((*meta)->decode(std::vector<token_id>{6, 2}, false), "<x>a");

  auto bl = hf_tokenizer_load(
      write("bl.json", R"({"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":true,"use_regex":true},
    "decoder":{"type":"ByteLevel"},
    "model":{"type":"BPE","vocab":{"Ġ":0,"a":1,"b":2,"Ġa":3,"ab":4},"merges":[["Ġ","a"],["a","b"]]}})"));
  ASSERT_TRUE(bl) << bl.error();
  EXPECT_EQ((*bl)->encode("ab ab", false), (std::vector<token_id>{3, 2, 3, 2}));  // lowest rank first
  EXPECT_EQ((*bl)->decode(std::vector<token_id>{3, 2}, false), " ab");
  EXPECT_EQ((*bl)->token_text(3), "Ġa");
}

// Random byte flips of a valid file and random input bytes: errors or ids, never a crash.
TEST_F(hf_tokenizer_files, mutated_files_and_random_text_do_not_crash) {
  const std::string good =
      sp_json(R"({"id":1,"content":"<s>","special":true},{"id":2,"content":"</s>","special":true})");
  std::mt19937 rng(7);
  for (int round = 0; round < 200; ++round) {
    std::string bad = good;
    for (int k = 0; k < 3; ++k) bad[rng() % bad.size()] = static_cast<char>(rng() % 256);
    auto tok = hf_tokenizer_load(write("tokenizer.json", bad));
    if (tok) (*tok)->encode("ab c é </s>", true);
  }
  auto tok = hf_tokenizer_load(write("tokenizer.json", good));
  ASSERT_TRUE(tok) << tok.error();
  for (int round = 0; round < 500; ++round) {
    std::string text(rng() % 24, '\0');
    for (char& c : text) c = "ab </s>\xC3\xA9\xFF\x80 "[rng() % 12];
    const std::vector<token_id> ids = (*tok)->encode(text, false);
    for (const token_id id : ids) ASSERT_TRUE(id >= 0 && id < (*tok)->vocab_size());
    EXPECT_EQ((*tok)->decode(ids, false), streamed(**tok, ids));
  }
}

TEST_F(hf_tokenizer_files, tokenizer_config_names_special_tokens) {
  write("tokenizer.json",
        sp_json(R"({"id":1,"content":"<s>","special":true},{"id":2,"content":"</s>","special":true})"));
  write("tokenizer_config.json", R"({"bos_token":{"content":"</s>"},"eos_token":"<s>","add_bos_token":false})");
  auto tok = hf_tokenizer_load(dir_);
  ASSERT_TRUE(tok) << tok.error();
  EXPECT_EQ((*tok)->bos_id(), 2);
  EXPECT_EQ((*tok)->eos_id(), 1);
  EXPECT_EQ((*tok)->encode("ab", true), (std::vector<token_id>{8}));  // add_bos_token false
  write("tokenizer_config.json", R"({"bos_token":"<nope>"})");
  auto bad = hf_tokenizer_load(dir_);
  ASSERT_FALSE(bad);
  EXPECT_NE(bad.error().find("<nope>"), std::string::npos) << bad.error();
  write("tokenizer_config.json", "{oops");
  EXPECT_FALSE(hf_tokenizer_load(dir_));
}

TEST_F(hf_tokenizer_files, load_any_picks_the_format) {
  write("tokenizer.json", sp_json(""));
  auto from_dir = tokenizer_load_any(dir_, 0);
  ASSERT_TRUE(from_dir) << from_dir.error();
  EXPECT_EQ((*from_dir)->encode("ab", false), (std::vector<token_id>{8}));
  auto gguf = tokenizer_load_any(write("model.gguf", std::string("GGUF\x03\0\0\0", 8)), 0);
  ASSERT_FALSE(gguf);
  EXPECT_NE(gguf.error().find("GGUF"), std::string::npos);
  EXPECT_FALSE(tokenizer_load_any(write("junk.bin", "not a tokenizer at all"), 0));
  fs::create_directories(dir_ / "empty");
  EXPECT_FALSE(tokenizer_load_any(dir_ / "empty", 0));
  const fs::path tok512 = test::model_file("tok512.bin");
  PAGEDSERVE_REQUIRE_DATA(tok512);
  auto l2c = tokenizer_load_any(tok512, 0);  // token count found by walking the file
  ASSERT_TRUE(l2c) << l2c.error();
  EXPECT_EQ((*l2c)->vocab_size(), 512);
}

TEST_F(hf_tokenizer_files, corrupt_files_are_clear_errors) {
  const std::pair<std::string, std::string> cases[] = {
      {"", "not valid JSON"},  // an empty file
      {"{\"model\": {\"type\": \"BPE\", \"vocab\": {", "not valid JSON"},
      {"[1, 2, 3]", "not a JSON object"},
      {"{}", "model"},
      {R"({"model":{"type":"WordPiece","vocab":{}}})", "WordPiece"},
      {R"({"model":{"type":"BPE","vocab":{"a":-5},"merges":[]}})", "valid id"},
      {R"({"model":{"type":"BPE","vocab":{"a":99999999999},"merges":[]}})", "valid id"},
      {R"({"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b"]}})", "missing from the vocabulary"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":["a"]}})", "not two tokens"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[[1,2]]}})", "merge 0"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"normalizer":{"type":"Lowercase"}})", "Lowercase"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(["},"behavior":"Isolated"}})",
       "regex"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"decoder":{"type":"WordPiece"}})", "WordPiece"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"added_tokens":[{"id":"x","content":"a"}]})",
       "added token"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[],"unk_token":"<u>"}})", "unk_token"},
      {R"({"model":{"type":"BPE","vocab":{"a":0},"merges":[]},"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<x>"}}]}})",
       "<x>"},
  };
  for (const auto& [json, want] : cases) {
    auto tok = hf_tokenizer_load(write("tokenizer.json", json));
    ASSERT_FALSE(tok) << json;
    EXPECT_NE(tok.error().find(want), std::string::npos) << json << " -> " << tok.error();
  }
  EXPECT_FALSE(hf_tokenizer_load(dir_ / "missing.json"));
  fs::remove(dir_ / "tokenizer.json");
  auto none = hf_tokenizer_load(dir_);
  ASSERT_FALSE(none);
  EXPECT_NE(none.error().find("no such file"), std::string::npos) << none.error();
}

TEST_F(hf_tokenizer_files, truncated_real_files_are_errors) {
  const fs::path dir = tokenizer_dir("qwen3");
  PAGEDSERVE_REQUIRE_DATA(dir);
  std::ifstream in(dir / "tokenizer.json", std::ios::binary);
  const std::string full{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  for (const double frac : {0.0001, 0.01, 0.3, 0.6, 0.9, 0.99999}) {
    const auto n = static_cast<std::size_t>(static_cast<double>(full.size()) * frac);
    auto tok = hf_tokenizer_load(write("tokenizer.json", std::string_view(full).substr(0, n)));
    EXPECT_FALSE(tok) << "cut at " << n;
  }
}

}  // namespace
}  // namespace pagedserve
