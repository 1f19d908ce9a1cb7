// A GGUF file is all `serve` needs: stories260K and its tok512 vocabulary written as one GGUF
// (llama arch, F32, SentencePiece tokenizer with scores, a chat template) answers over HTTP like the
// llama2.c checkpoint + tokenizer.bin pair, and `tokenize` reads the same file.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <cstring>
#include <fstream>

#include "e2e/openai_http_client.hpp"
#include "e2e/server_process.hpp"
#include "pagedserve/gguf_writer.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve::e2e {
namespace {

// tok512.bin (llama2.c: i32 max length, then per token f32 score, i32 length, bytes) as GGUF
// SentencePiece metadata: spaces back to U+2581, <0xXX> byte pieces typed as bytes.
void add_llama2c_tokenizer(gguf_writer& w, const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  const std::string d{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;
  for (std::size_t pos = 4; pos + 8 <= d.size();) {
    float score;
    std::int32_t len;
    std::memcpy(&score, d.data() + pos, 4);
    std::memcpy(&len, d.data() + pos + 4, 4);
    std::string piece = d.substr(pos + 8, static_cast<std::size_t>(len));
    pos += 8 + static_cast<std::size_t>(len);
    for (std::size_t i; (i = piece.find(' ')) != std::string::npos;) piece.replace(i, 1, "\u2581");
    const auto id = tokens.size();
    types.push_back(id == 0 ? 2 : id < 3 ? 3 : piece.starts_with("<0x") && piece.size() == 6 ? 6 : 1);
    tokens.push_back(piece);
    scores.push_back(score);
  }
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_f32s("tokenizer.ggml.scores", scores);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.bos_token_id", 1);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.eot_token_id", 1);  // llama2.c stories end with BOS
  w.add_string("tokenizer.chat_template",
               "{% for m in messages %}{{ m['content'] }}{% endfor %}{% if add_generation_prompt %} {% endif %}");
}

void add_matrix(gguf_writer& g, const std::string& name, const weight& w) {
  g.add_tensor(name, {static_cast<std::uint64_t>(w.cols), static_cast<std::uint64_t>(w.rows)}, gguf_tensor_type::f32,
               std::span<const float>(w.f32(), w.n_elements()));
}

void add_vector(gguf_writer& g, const std::string& name, const float* v, int n) {
  g.add_tensor(name, {static_cast<std::uint64_t>(n)}, gguf_tensor_type::f32, std::span<const float>(v, n));
}

std::filesystem::path write_stories_gguf() {
  auto m = llama2c_model_load(model_path());
  EXPECT_TRUE(m.has_value());
  const model_config& c = (*m)->config;
  gguf_writer g;
  g.add_string("general.architecture", "llama");
  g.add_string("general.name", "stories260K-gguf");
  for (const auto& [key, v] : {std::pair{"llama.context_length", c.seq_len}, std::pair{"llama.embedding_length", c.dim},
                               std::pair{"llama.block_count", c.n_layers}, std::pair{"llama.feed_forward_length", c.hidden_dim},
                               std::pair{"llama.attention.head_count", c.n_heads},
                               std::pair{"llama.attention.head_count_kv", c.n_kv_heads}})
    g.add_u32(key, static_cast<std::uint32_t>(v));
  g.add_f32("llama.rope.freq_base", c.rope_theta);
  g.add_f32("llama.attention.layer_norm_rms_epsilon", c.rms_norm_eps);
  add_llama2c_tokenizer(g, tokenizer_path());
  add_matrix(g, "token_embd.weight", (*m)->token_embedding);
  for (int l = 0; l < c.n_layers; ++l) {
    const layer_weights& w = (*m)->layers[l];
    const std::string at = "blk." + std::to_string(l) + ".";
    add_vector(g, at + "attn_norm.weight", w.rms_att, c.dim);
    add_matrix(g, at + "attn_q.weight", w.wq);
    add_matrix(g, at + "attn_k.weight", w.wk);
    add_matrix(g, at + "attn_v.weight", w.wv);
    add_matrix(g, at + "attn_output.weight", w.wo);
    add_vector(g, at + "ffn_norm.weight", w.rms_ffn, c.dim);
    add_matrix(g, at + "ffn_gate.weight", w.w_gate);
    add_matrix(g, at + "ffn_up.weight", w.w_up);
    add_matrix(g, at + "ffn_down.weight", w.w_down);
  }
  add_vector(g, "output_norm.weight", (*m)->rms_final, c.dim);
  const auto path = std::filesystem::temp_directory_path() / ("pagedserve_e2e_" + std::to_string(::getpid()) + ".gguf");
  EXPECT_TRUE(g.write(path).has_value());
  return path;
}

raw_response post(unsigned short port, const std::string& path, const std::string& body) {
  http_conn c;
  EXPECT_TRUE(c.connect(port));
  EXPECT_TRUE(c.send(http_post_bytes(path, body)));
  auto r = c.read_response(std::chrono::seconds(30));
  EXPECT_TRUE(r) << r.error();
  return r ? *r : raw_response{};
}

std::string completion_text(const raw_response& r) {
  simdjson::dom::parser parser;
  std::string_view text;
  if (parser.parse(r.body)["choices"].at(0)["text"].get(text) != simdjson::SUCCESS) return "<no text in " + r.body + ">";
  return std::string(text);
}

TEST(gguf_serve, a_gguf_file_alone_serves_like_the_llama2c_pair) {
  PAGEDSERVE_REQUIRE_SHARED(model_path());
  const auto gguf = write_stories_gguf();
  const std::string body = R"({"prompt":"Once upon a time","max_tokens":24,"temperature":0})";
  std::string want;
  {
    server_process original;
    ASSERT_TRUE(original.ready()) << original.error();
    want = completion_text(post(original.port(), "/v1/completions", body));
  }
  server_process served({"--model", gguf.string(), "--tokenizer", ""});
  ASSERT_TRUE(served.ready()) << served.error();
  const raw_response r = post(served.port(), "/v1/completions", body);
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_FALSE(want.empty());
  EXPECT_EQ(completion_text(r), want);
  const raw_response chat = post(served.port(), "/v1/chat/completions",
                                 R"({"messages":[{"role":"user","content":"Lily"}],"max_tokens":4,"temperature":0})");
  EXPECT_EQ(chat.status, 200) << chat.body << "\n" << served.log();  // the file's chat template renders it

  // The tokenize CLI reads the tokenizer out of the same file, with llama2.c's ids.
  for (const char* text : {"Once upon a time", "One day, Lily met a cat. caf\xc3\xa9!"}) {
    const auto a = run_process({test::server_binary().string(), "tokenize", "--tokenizer", gguf.string(), "--text", text},
                               std::chrono::seconds(30));
    const auto b = run_process({test::server_binary().string(), "tokenize", "--tokenizer", tokenizer_path().string(),
                                "--text", text},
                               std::chrono::seconds(30));
    ASSERT_TRUE(a.exited && a.exit_code == 0) << a.err;
    EXPECT_EQ(a.out, b.out) << text;
  }
  std::filesystem::remove(gguf);
}

}  // namespace
}  // namespace pagedserve::e2e
