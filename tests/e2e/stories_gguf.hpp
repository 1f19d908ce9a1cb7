#pragma once
// stories260K and its tok512 vocabulary written as one GGUF file (llama arch, F32, SentencePiece
// tokenizer with scores, a chat template): a GGUF the end-to-end tests can serve.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "support/server_process.hpp"
#include "model/gguf_writer.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve::e2e {

// tok512.bin (llama2.c: i32 max length, then per token f32 score, i32 length, bytes) as GGUF
// SentencePiece metadata: spaces back to U+2581, <0xXX> byte pieces typed as bytes.
// add_bos false: a tokenizer that adds no BOS, as Qwen's and GPT-2's (an empty prompt is no tokens).
inline void add_llama2c_tokenizer(gguf_writer& w, const std::filesystem::path& path, bool add_bos = true) {
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
  w.add_bool("tokenizer.ggml.add_bos_token", add_bos);
  w.add_u32("tokenizer.ggml.eos_token_id", 2);
  w.add_u32("tokenizer.ggml.eot_token_id", 1);  // llama2.c stories end with BOS
  w.add_string("tokenizer.chat_template",
               "{% for m in messages %}{{ m['content'] }}{% endfor %}{% if add_generation_prompt %} {% endif %}");
}

inline void add_matrix(gguf_writer& g, const std::string& name, const weight& w) {
  g.add_tensor(name, {static_cast<std::uint64_t>(w.cols), static_cast<std::uint64_t>(w.rows)}, gguf_tensor_type::f32,
               std::span<const float>(w.f32(), w.n_elements()));
}

inline void add_vector(gguf_writer& g, const std::string& name, const float* v, int n) {
  g.add_tensor(name, {static_cast<std::uint64_t>(n)}, gguf_tensor_type::f32, std::span<const float>(v, n));
}

// n_splits > 1: written as a split model (llama.cpp's gguf-split naming); the first split's path.
inline std::filesystem::path write_stories_gguf(bool add_bos = true, int n_splits = 1) {
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
  add_llama2c_tokenizer(g, tokenizer_path(), add_bos);
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
  const std::string stem = "pagedserve_e2e_" + std::to_string(::getpid()) + (add_bos ? "" : "_nobos");
  if (n_splits > 1) {
    auto first = g.write_splits((std::filesystem::temp_directory_path() / stem).string(), n_splits);
    EXPECT_TRUE(first.has_value()) << first.error();
    return first.value_or(std::filesystem::path{});
  }
  const auto path = std::filesystem::temp_directory_path() / (stem + ".gguf");
  EXPECT_TRUE(g.write(path).has_value());
  return path;
}

}  // namespace pagedserve::e2e
