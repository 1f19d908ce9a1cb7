// GPT-2 end to end: a random-weight GPT2LMHeadModel folder with a small byte-level BPE tokenizer.json
// (GPT-2's byte alphabet, a few merges, <|endoftext|>) written here, served on 127.0.0.1; its greedy
// completion over a real socket equals `pagedserve generate`'s and the scalar reference's (gpt2_reference
// decoding greedily, its ids turned into text by the same tokenizer.json). The same model as a GGUF file
// with the tokenizer inside serves the same text.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <fstream>

#include "support/openai_http_client.hpp"
#include "support/server_process.hpp"
#include "model/gpt2_reference.hpp"
#include "model/gpt2_test_model.hpp"
#include "model/gguf_writer.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "pagedserve/utf8.hpp"

namespace pagedserve::e2e {
namespace {

// GPT-2's bytes_to_unicode(): printable Latin-1 bytes stand for themselves, the other 68 bytes for
// U+0100 on, in byte order. Returns the UTF-8 of each byte's stand-in, ids in the order GPT-2's vocab.json
// gives them (the printable ranges first).
std::vector<std::pair<int, std::string>> byte_alphabet() {
  auto utf8 = [](int cp) {
    std::string s;
    utf8_append(s, static_cast<char32_t>(cp));
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
  std::vector<std::pair<std::string, std::string>> merges;  // in rank order; token 256 + i is merge i
};

// A GPT-2 style tokenizer.json: 256 byte tokens, merges that spell a few English words, <|endoftext|> last.
bpe_files gpt2_tokenizer() {
  const std::vector<std::pair<std::string, std::string>> merges = {
      {"Ġ", "t"}, {"h", "e"},  {"Ġt", "he"}, {"i", "n"},   {"Ġ", "a"},   {"o", "n"},  {"a", "t"},   {"Ġ", "c"},
      {"Ġc", "at"}, {"e", "r"}, {"Ġ", "u"},  {"p", "on"},  {"Ġu", "pon"}, {"O", "n"}, {"c", "e"},   {"On", "ce"},
      {"i", "m"},  {"Ġt", "im"}, {"Ġtim", "e"}, {"Ġ", "s"}, {"a", "n"},   {"Ġa", "n"}, {"Ġan", "d"}, {"o", "r"}};
  bpe_files f;
  f.merges = merges;
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

// A random GPT-2 over that tokenizer in which only printable ASCII tokens can win (a zero lm_head row
// gives a zero logit, below the largest of ~120 random ones), so every completion is plain text and runs
// its full length; and the reference's greedy completion of the prompt. The head is untied: a tied one
// mostly echoes the last token (the residual stream still holds its embedding).
struct gpt2_case {
  bpe_files tok = gpt2_tokenizer();
  test::gpt2_spec spec;
  test::tensor_map tensors;
  std::filesystem::path dir = std::filesystem::temp_directory_path() / ("pagedserve_e2e_gpt2_" + std::to_string(::getpid()));
  std::string prompt = "Once upon a time, the cat";
  int max_tokens = 24;
  std::string want;  // the reference's completion

  gpt2_case() {
    spec.name = "gpt2_e2e";
    spec.dim = 64, spec.heads = 4, spec.layers = 2, spec.positions = 64, spec.vocab = tok.vocab_size;
    spec.bos = spec.eos = tok.eos;  // GPT-2's <|endoftext|> is both
    spec.tied = false;
    tensors = test::gpt2_random_tensors(spec, dtype::f32, 2024);
    std::vector<char> keep(spec.vocab, 0);
    for (int id : tok.ascii_ids) keep[id] = 1;
    auto& head = tensors.at("lm_head.weight").values;
    for (int v = 0; v < spec.vocab; ++v)
      if (!keep[v]) std::fill_n(head.begin() + static_cast<std::ptrdiff_t>(v) * spec.dim, spec.dim, 0.0f);
    test::write_gpt2_folder(dir, spec, tensors, dtype::f32);
    std::ofstream(dir / "tokenizer.json") << tok.tokenizer_json;
  }
  ~gpt2_case() { std::filesystem::remove_all(dir); }

  // The in-process reference: the tokenizer's ids, greedy in double precision, decoded.
  void compute_reference() {
    auto vocabulary = hf_tokenizer_load(dir / "tokenizer.json");
    ASSERT_TRUE(vocabulary.has_value()) << vocabulary.error();
    const std::vector<token_id> prompt_ids = (*vocabulary)->encode(prompt, true);
    ASSERT_LT(prompt_ids.size(), prompt.size()) << "the merges apply";
    const auto ids = test::gpt2_reference(spec, tensors).greedy(std::vector<int>(prompt_ids.begin(), prompt_ids.end()), max_tokens);
    const std::vector<token_id> generated(ids.begin() + static_cast<std::ptrdiff_t>(prompt_ids.size()), ids.end());
    ASSERT_EQ(static_cast<int>(generated.size()), max_tokens);
    want = (*vocabulary)->decode(generated, false);
  }

  // The same model and tokenizer as one GGUF file, as llama.cpp's converter writes GPT-2's: tokens in id
  // order, <|endoftext|> a control token, the merges, pre-tokenizer "gpt-2".
  std::filesystem::path write_gguf() const {
    gguf_writer w;
    test::gguf_add_gpt2(w, spec, tensors, gguf_tensor_type::f32);
    std::vector<std::string> tokens, merges;
    for (const auto& [byte, text] : byte_alphabet()) tokens.push_back(text);
    for (const auto& [a, b] : tok.merges) {
      tokens.push_back(a + b);
      merges.push_back(a + " " + b);
    }
    tokens.push_back("<|endoftext|>");
    std::vector<std::int32_t> types(tokens.size(), 1);
    types.back() = 3;
    w.add_string("tokenizer.ggml.model", "gpt2");
    w.add_string("tokenizer.ggml.pre", "gpt-2");
    w.add_strings("tokenizer.ggml.tokens", tokens);
    w.add_i32s("tokenizer.ggml.token_type", types);
    w.add_strings("tokenizer.ggml.merges", merges);
    const auto path = dir / "gpt2.gguf";
    EXPECT_TRUE(w.write(path).has_value());
    return path;
  }

  // The server's greedy completion over a real socket.
  std::string served_completion(const std::vector<std::string>& args) const {
    server_process served(args);
    EXPECT_TRUE(served.ready()) << served.error();
    if (!served.ready()) return "<not served>";
    http_conn c;
    EXPECT_TRUE(c.connect(served.port()));
    EXPECT_TRUE(c.send(http_post_bytes("/v1/completions", R"({"prompt": ")" + prompt + R"(", "max_tokens": )" +
                                                              std::to_string(max_tokens) + R"(, "temperature": 0})")));
    auto r = c.read_response(std::chrono::seconds(30));
    EXPECT_TRUE(r) << r.error();
    if (!r) return "<no response>";
    EXPECT_EQ(r->status, 200) << r->body;
    EXPECT_EQ(served.log().find("is not known here"), std::string::npos) << served.log();  // gpt-2 pre-tokenizer known
    return completion_text(*r);
  }
};

TEST(gpt2_serve, folder_greedy_completion_over_a_socket_equals_generate_and_the_reference) {
  gpt2_case g;
  g.compute_reference();
  ASSERT_FALSE(g.want.empty());
  const auto cli = run_process({test::server_binary().string(), "generate", "--model", g.dir.string(), "--tokenizer", "",
                                "--prompt", g.prompt, "--max-tokens", std::to_string(g.max_tokens), "--temperature", "0"},
                               std::chrono::seconds(60));
  ASSERT_TRUE(cli.exited && cli.exit_code == 0) << cli.err;
  const std::string got = g.served_completion({"--model", g.dir.string(), "--tokenizer", ""});
  std::printf("[ gpt2_e2e ] '%s' -> '%s'\n", g.prompt.c_str(), got.c_str());
  EXPECT_EQ(got, g.want) << "server vs scalar reference";
  EXPECT_EQ(cli.out, got) << "generate vs server";
}

// The same model as one GGUF (tokenizer inside, pre-tokenizer "gpt-2") serves the same completion, and
// its tokenizer splits text as tokenizer.json's ByteLevel regex does (contractions, digits, spaces).
TEST(gpt2_serve, gguf_file_serves_the_same_completion) {
  gpt2_case g;
  g.compute_reference();
  const auto gguf = g.write_gguf();
  EXPECT_EQ(g.served_completion({"--model", gguf.string(), "--tokenizer", ""}), g.want);
  for (const char* text : {"Once upon a time, the cat's 12 cats  ran\n\n  away!", "it'll   be\tdone 2024?"}) {
    const auto a = run_process({test::server_binary().string(), "tokenize", "--tokenizer", gguf.string(), "--text", text},
                               std::chrono::seconds(30));
    const auto b = run_process({test::server_binary().string(), "tokenize", "--tokenizer", g.dir.string(), "--text", text},
                               std::chrono::seconds(30));
    ASSERT_TRUE(a.exited && a.exit_code == 0) << a.err;
    ASSERT_TRUE(b.exited && b.exit_code == 0) << b.err;
    EXPECT_EQ(a.out, b.out) << text;
    EXPECT_EQ(a.err.find("is not known here"), std::string::npos) << a.err;
  }
}

}  // namespace
}  // namespace pagedserve::e2e
