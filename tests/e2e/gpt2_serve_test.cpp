// GPT-2 end to end: a random-weight GPT2LMHeadModel folder with a small byte-level BPE tokenizer.json
// (GPT-2's byte alphabet, a few merges, <|endoftext|>) written here, served on 127.0.0.1; its greedy
// completion over a real socket equals `pagedserve generate`'s and the scalar reference's (gpt2_reference
// decoding greedily, its ids turned into text by the same tokenizer.json).
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>

#include "e2e/openai_http_client.hpp"
#include "e2e/server_process.hpp"
#include "model/gpt2_reference.hpp"
#include "model/gpt2_test_model.hpp"
#include "pagedserve/hf_tokenizer.hpp"

namespace pagedserve::e2e {
namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes for
// U+0100 on, in byte order. Returns the UTF-8 of each byte's stand-in, ids in the order GPT-2's vocab.json
// gives them (the printable ranges first).
std::vector<std::pair<int, std::string>> byte_alphabet() {
  auto utf8 = [](int cp) {
    std::string s;
    if (cp < 0x80) s += static_cast<char>(cp);
    else {
      s += static_cast<char>(0xC0 | (cp >> 6));
      s += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return s;
  };
  std::vector<std::pair<int, std::string>> out;
  auto printable = [](int b) { return (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255); };
  for (int b = 0; b < 256; ++b)
    if (printable(b)) out.push_back({b, utf8(b)});
  int n = 0;
  for (int b = 0; b < 256; ++b)
    if (!printable(b)) out.push_back({b, utf8(256 + n++)});
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

struct bpe_files {
  std::string tokenizer_json;
  int vocab_size = 0;
  int eos = 0;
  std::vector<int> ascii_ids;  // tokens whose text is printable ASCII (bytes 32..126 and the merges)
};

// A GPT-2 style tokenizer.json: 256 byte tokens, merges that spell a few English words, <|endoftext|> last.
bpe_files gpt2_tokenizer() {
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"Ġ", "t"}, {"h", "e"},  {"Ġt", "he"}, {"i", "n"},   {"Ġ", "a"},   {"o", "n"},  {"a", "t"},   {"Ġ", "c"},
      {"Ġc", "at"}, {"e", "r"}, {"Ġ", "u"},  {"p", "on"},  {"Ġu", "pon"}, {"O", "n"}, {"c", "e"},   {"On", "ce"},
      {"i", "m"},  {"Ġt", "im"}, {"Ġtim", "e"}, {"Ġ", "s"}, {"a", "n"},   {"Ġa", "n"}, {"Ġan", "d"}, {"o", "r"}};
  bpe_files f;
  std::string vocab;
  int id = 0;
  for (const auto& [byte, text] : byte_alphabet()) {
    vocab += (id ? ", " : "") + json_string(text) + ": " + std::to_string(id);
    if (byte >= 32 && byte <= 126) f.ascii_ids.push_back(id);
    ++id;
  }
  std::string merge_list;
  for (const auto& [a, b] : merges) {
    vocab += ", " + json_string(a + b) + ": " + std::to_string(id);
    f.ascii_ids.push_back(id++);
    merge_list += (merge_list.empty() ? "" : ", ") + json_string(a + " " + b);
  }
  f.eos = id;
  vocab += ", \"<|endoftext|>\": " + std::to_string(id++);
  f.vocab_size = id;
  f.tokenizer_json = R"({"version": "1.0", "truncation": null, "padding": null, "added_tokens": [{"id": )" +
                     std::to_string(f.eos) +
                     R"(, "content": "<|endoftext|>", "single_word": false, "lstrip": false, "rstrip": false,)"
                     R"( "normalized": true, "special": true}], "normalizer": null,)"
                     R"( "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": true},)"
                     R"( "post_processor": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": false, "use_regex": true},)"
                     R"( "decoder": {"type": "ByteLevel", "add_prefix_space": true, "trim_offsets": true, "use_regex": true},)"
                     R"( "model": {"type": "BPE", "dropout": null, "unk_token": null, "continuing_subword_prefix": "",)"
                     R"( "end_of_word_suffix": "", "fuse_unk": false, "byte_fallback": false, "vocab": {)" +
                     vocab + "}, \"merges\": [" + merge_list + "]}}";
  return f;
}

std::string completion_text(const raw_response& r) {
  simdjson::dom::parser parser;
  std::string_view text;
  if (parser.parse(r.body)["choices"].at(0)["text"].get(text) != simdjson::SUCCESS) return "<no text in " + r.body + ">";
  return std::string(text);
}

TEST(gpt2_serve, greedy_completion_over_a_socket_equals_generate_and_the_reference) {
  const bpe_files tok = gpt2_tokenizer();
  test::gpt2_spec s;
  s.name = "gpt2_e2e";
  s.dim = 64, s.heads = 4, s.layers = 2, s.positions = 64, s.vocab = tok.vocab_size;
  s.bos = s.eos = tok.eos;  // GPT-2's <|endoftext|> is both
  auto tensors = test::gpt2_random_tensors(s, dtype::f32, 2024);
  // Only printable ASCII tokens can win (tied head: a zero wte row gives a zero logit, below the
  // largest of ~120 random ones), so every completion is plain text and runs its full length.
  std::vector<char> keep(s.vocab, 0);
  for (int id : tok.ascii_ids) keep[id] = 1;
  auto& wte = tensors.at("wte.weight").values;
  for (int v = 0; v < s.vocab; ++v)
    if (!keep[v]) std::fill(wte.begin() + static_cast<std::ptrdiff_t>(v) * s.dim, wte.begin() + static_cast<std::ptrdiff_t>(v + 1) * s.dim, 0.0f);
  const auto dir = std::filesystem::temp_directory_path() / ("pagedserve_e2e_gpt2_" + std::to_string(::getpid()));
  test::write_gpt2_folder(dir, s, tensors, dtype::f32);
  std::ofstream(dir / "tokenizer.json") << tok.tokenizer_json;

  const std::string prompt = "Once upon a time, the cat";
  const int max_tokens = 24;
  // The in-process reference: the tokenizer's ids, greedy in double precision, decoded.
  auto vocabulary = hf_tokenizer_load(dir / "tokenizer.json");
  ASSERT_TRUE(vocabulary.has_value()) << vocabulary.error();
  const std::vector<token_id> prompt_ids = (*vocabulary)->encode(prompt, true);
  ASSERT_LT(prompt_ids.size(), prompt.size()) << "the merges apply";
  const auto ids = test::gpt2_reference(s, tensors).greedy(std::vector<int>(prompt_ids.begin(), prompt_ids.end()), max_tokens);
  const std::vector<token_id> generated(ids.begin() + static_cast<std::ptrdiff_t>(prompt_ids.size()), ids.end());
  const std::string want = (*vocabulary)->decode(generated, false);
  EXPECT_EQ(static_cast<int>(generated.size()), max_tokens);

  const auto cli = run_process({test::server_binary().string(), "generate", "--model", dir.string(), "--tokenizer", "",
                                "--prompt", prompt, "--max-tokens", std::to_string(max_tokens), "--temperature", "0"},
                               std::chrono::seconds(60));
  ASSERT_TRUE(cli.exited && cli.exit_code == 0) << cli.err;

  server_process served({"--model", dir.string(), "--tokenizer", ""});
  ASSERT_TRUE(served.ready()) << served.error();
  http_conn c;
  ASSERT_TRUE(c.connect(served.port()));
  ASSERT_TRUE(c.send(http_post_bytes("/v1/completions", R"({"prompt": ")" + prompt + R"(", "max_tokens": )" +
                                                            std::to_string(max_tokens) + R"(, "temperature": 0})")));
  auto r = c.read_response(std::chrono::seconds(30));
  ASSERT_TRUE(r) << r.error();
  ASSERT_EQ(r->status, 200) << r->body;
  const std::string got = completion_text(*r);
  std::printf("[ gpt2_e2e ] prompt '%s' -> '%s'\n", prompt.c_str(), got.c_str());
  EXPECT_FALSE(got.empty());
  EXPECT_EQ(got, want) << "server vs scalar reference";
  EXPECT_EQ(cli.out, got) << "generate vs server";
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace pagedserve::e2e
