// The type gguf_recipe picks for named tensors of real model shapes, under every llama-quantize ftype,
// against llama.cpp's llama_tensor_get_type worked out by hand (the expectations below are derived from
// its rules, not from this code): TinyLlama's shape (22 layers, 32 query heads over 4 KV heads),
// Qwen3-30B-A3B's (48 layers, 128 experts), Mixtral's (8 experts: llama.cpp's bumps), a Llama-70B
// (attn_v's 70B bump), and rows that are not whole blocks (the fallbacks).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/gguf_recipe.hpp"

namespace pagedserve {
namespace {

using enum dtype;
using ne_t = std::vector<std::uint64_t>;

dtype pick(std::string_view ftype, const gguf_recipe_model& m, const std::string& name, const ne_t& ne) {
  const std::optional<gguf_recipe> r = gguf_recipe_parse(ftype);
  EXPECT_TRUE(r) << ftype;
  return r ? gguf_recipe_type(*r, m, name, ne) : dtype::i8;
}

struct row {
  std::string_view ftype;
  std::vector<dtype> types;  // one per column
};

// Checks every row of a table: column c is tensor names[c] of dimensions ne_of(names[c]).
template <class NeOf>
void expect_table(const gguf_recipe_model& m, const std::vector<std::string>& names, NeOf ne_of,
                  const std::vector<row>& rows) {
  for (const row& r : rows) {
    ASSERT_EQ(r.types.size(), names.size()) << r.ftype;
    for (std::size_t c = 0; c < names.size(); ++c)
      EXPECT_EQ(dtype_name(pick(r.ftype, m, names[c], ne_of(names[c]))), dtype_name(r.types[c]))
          << r.ftype << " " << names[c];
  }
}

// TinyLlama-1.1B: dim 2048, 32 heads of 64 over 4 KV heads (n_gqa 8), FFN 5632, vocab 32000, untied.
ne_t tinyllama_ne(const std::string& name) {
  if (name.starts_with("token_embd") || name.starts_with("output")) return {2048, 32000};
  if (name.find("attn_k.") != std::string::npos || name.find("attn_v.") != std::string::npos) return {2048, 256};
  if (name.find("ffn_down") != std::string::npos) return {5632, 2048};
  if (name.find("ffn_") != std::string::npos) return {2048, 5632};
  return {2048, 2048};
}

// use_more_bits over 22 layers (n/8 = 2, 7n/8 = 19): layers 0, 1, 4, 7, ..., 16, 19, 20, 21.
TEST(gguf_recipe, tinyllama_shape_takes_llama_cpps_types) {
  const gguf_recipe_model m{.n_layers = 22, .n_gqa = 8};
  const std::vector<std::string> names = {
      "token_embd.weight",     "output.weight",        "blk.0.attn_v.weight",     "blk.1.attn_v.weight",
      "blk.2.attn_v.weight",   "blk.3.attn_v.weight",  "blk.4.attn_v.weight",     "blk.0.ffn_down.weight",
      "blk.1.ffn_down.weight", "blk.2.ffn_down.weight", "blk.4.ffn_down.weight",  "blk.5.ffn_down.weight",
      "blk.21.ffn_down.weight", "blk.5.attn_output.weight", "blk.5.attn_k.weight", "blk.5.attn_q.weight",
      "blk.5.ffn_gate.weight", "blk.5.ffn_up.weight"};
  //           embd    output  | attn_v 0-4                    | ffn_down 0 1 2 4 5 21                 | o5 k5 q5 gate5 up5
  expect_table(m, names, tinyllama_ne, {
      {"Q4_0",   {q4_0, q6_k,   q4_0, q4_0, q4_0, q4_0, q4_0,   q4_0, q4_0, q4_0, q4_0, q4_0, q4_0,   q4_0, q4_0, q4_0, q4_0, q4_0}},
      {"Q4_1",   {q4_1, q6_k,   q4_1, q4_1, q4_1, q4_1, q4_1,   q4_1, q4_1, q4_1, q4_1, q4_1, q4_1,   q4_1, q4_1, q4_1, q4_1, q4_1}},
      {"Q5_0",   {q5_0, q6_k,   q5_0, q5_0, q5_0, q5_0, q5_0,   q5_0, q5_0, q5_0, q5_0, q5_0, q5_0,   q5_0, q5_0, q5_0, q5_0, q5_0}},
      {"Q5_1",   {q5_1, q6_k,   q5_1, q5_1, q5_1, q5_1, q5_1,   q5_1, q5_1, q5_1, q5_1, q5_1, q5_1,   q5_1, q5_1, q5_1, q5_1, q5_1}},
      {"Q8_0",   {q8_0, q8_0,   q8_0, q8_0, q8_0, q8_0, q8_0,   q8_0, q8_0, q8_0, q8_0, q8_0, q8_0,   q8_0, q8_0, q8_0, q8_0, q8_0}},
      // Q2_K: grouped attn_v (n_gqa >= 4) q4_K, every ffn_down and attn_output q3_K.
      {"Q2_K",   {q2_k, q6_k,   q4_k, q4_k, q4_k, q4_k, q4_k,   q3_k, q3_k, q3_k, q3_k, q3_k, q3_k,   q3_k, q2_k, q2_k, q2_k, q2_k}},
      // Q2_K_S: grouped attn_v q4_K, ffn_down of the first eighth (layers 0, 1) q4_K.
      {"Q2_K_S", {q2_k, q6_k,   q4_k, q4_k, q4_k, q4_k, q4_k,   q4_k, q4_k, q2_k, q2_k, q2_k, q2_k,   q2_k, q2_k, q2_k, q2_k, q2_k}},
      {"Q3_K_S", {q3_k, q6_k,   q3_k, q3_k, q3_k, q3_k, q3_k,   q3_k, q3_k, q3_k, q3_k, q3_k, q3_k,   q3_k, q3_k, q3_k, q3_k, q3_k}},
      // Q3_K_M: attn_v q5_K for the first two, then q4_K; ffn_down q5_K in the first 16th (layer 0), then q4_K.
      {"Q3_K_M", {q3_k, q6_k,   q5_k, q5_k, q4_k, q4_k, q4_k,   q5_k, q4_k, q4_k, q4_k, q4_k, q4_k,   q4_k, q3_k, q3_k, q3_k, q3_k}},
      {"Q3_K",   {q3_k, q6_k,   q5_k, q5_k, q4_k, q4_k, q4_k,   q5_k, q4_k, q4_k, q4_k, q4_k, q4_k,   q4_k, q3_k, q3_k, q3_k, q3_k}},
      {"Q3_K_L", {q3_k, q6_k,   q5_k, q5_k, q5_k, q5_k, q5_k,   q5_k, q5_k, q5_k, q5_k, q5_k, q5_k,   q5_k, q3_k, q3_k, q3_k, q3_k}},
      // Q4_K_S: attn_v q5_K for the first four, ffn_down q5_K in the first eighth.
      {"Q4_K_S", {q4_k, q6_k,   q5_k, q5_k, q5_k, q5_k, q4_k,   q5_k, q5_k, q4_k, q4_k, q4_k, q4_k,   q4_k, q4_k, q4_k, q4_k, q4_k}},
      // Q4_K_M / Q5_K_M: attn_v and ffn_down q6_K where use_more_bits.
      {"Q4_K_M", {q4_k, q6_k,   q6_k, q6_k, q4_k, q4_k, q6_k,   q6_k, q6_k, q4_k, q6_k, q4_k, q6_k,   q4_k, q4_k, q4_k, q4_k, q4_k}},
      {"Q4_K",   {q4_k, q6_k,   q6_k, q6_k, q4_k, q4_k, q6_k,   q6_k, q6_k, q4_k, q6_k, q4_k, q6_k,   q4_k, q4_k, q4_k, q4_k, q4_k}},
      {"Q5_K_S", {q5_k, q6_k,   q5_k, q5_k, q5_k, q5_k, q5_k,   q5_k, q5_k, q5_k, q5_k, q5_k, q5_k,   q5_k, q5_k, q5_k, q5_k, q5_k}},
      {"Q5_K_M", {q5_k, q6_k,   q6_k, q6_k, q5_k, q5_k, q6_k,   q6_k, q6_k, q5_k, q6_k, q5_k, q6_k,   q5_k, q5_k, q5_k, q5_k, q5_k}},
      {"Q6_K",   {q6_k, q6_k,   q6_k, q6_k, q6_k, q6_k, q6_k,   q6_k, q6_k, q6_k, q6_k, q6_k, q6_k,   q6_k, q6_k, q6_k, q6_k, q6_k}},
      // IQ4: grouped attn_v q5_K, ffn_down of the first eighth q5_K (no imatrix).
      {"IQ4_NL", {iq4_nl, q6_k, q5_k, q5_k, q5_k, q5_k, q5_k,   q5_k, q5_k, iq4_nl, iq4_nl, iq4_nl, iq4_nl, iq4_nl, iq4_nl, iq4_nl, iq4_nl, iq4_nl}},
      {"IQ4_XS", {iq4_xs, q6_k, q5_k, q5_k, q5_k, q5_k, q5_k,   q5_k, q5_k, iq4_xs, iq4_xs, iq4_xs, iq4_xs, iq4_xs, iq4_xs, iq4_xs, iq4_xs, iq4_xs}},
      {"F16",    {f16, f16,     f16, f16, f16, f16, f16,        f16, f16, f16, f16, f16, f16,         f16, f16, f16, f16, f16}},
      {"BF16",   {bf16, bf16,   bf16, bf16, bf16, bf16, bf16,   bf16, bf16, bf16, bf16, bf16, bf16,   bf16, bf16, bf16, bf16, bf16}},
      {"pure:Q4_K", {q4_k, q4_k, q4_k, q4_k, q4_k, q4_k, q4_k,  q4_k, q4_k, q4_k, q4_k, q4_k, q4_k,   q4_k, q4_k, q4_k, q4_k, q4_k}},
  });
}

// Qwen3-30B-A3B: dim 2048, 32 query heads over 4 KV heads, 128 experts of 768, 48 layers (n/8 = 6,
// n/16 = 3, use_more_bits: 0-5, 8, 11, ..., 42-47). Expert ffn_down's layer comes from its name.
ne_t qwen3moe_ne(const std::string& name) {
  if (name.find("ffn_down_exps") != std::string::npos) return {768, 2048, 128};
  if (name.find("_exps") != std::string::npos) return {2048, 768, 128};
  if (name.find("ffn_gate_inp") != std::string::npos) return {2048, 128};
  if (name.find("attn_k.") != std::string::npos || name.find("attn_v.") != std::string::npos) return {2048, 512};
  if (name.find("attn_q.") != std::string::npos) return {2048, 4096};
  if (name.find("attn_output") != std::string::npos) return {4096, 2048};
  if (name.find("norm") != std::string::npos) return {128};
  return {2048, 151936};
}

TEST(gguf_recipe, qwen3moe_shape_takes_llama_cpps_types) {
  const gguf_recipe_model m{.n_layers = 48, .n_gqa = 8, .n_experts = 128};
  const std::vector<std::string> names = {
      "blk.0.ffn_down_exps.weight", "blk.3.ffn_down_exps.weight", "blk.7.ffn_down_exps.weight",
      "blk.8.ffn_down_exps.weight", "blk.47.ffn_down_exps.weight", "blk.8.ffn_gate_exps.weight",
      "blk.8.ffn_up_exps.weight",   "blk.1.attn_v.weight",         "blk.8.attn_v.weight",
      "blk.8.attn_output.weight",   "blk.8.attn_k.weight",         "blk.8.ffn_gate_inp.weight",
      "blk.8.attn_k_norm.weight"};
  //           ffn_down_exps 0 3 7 8 47        | gate8 up8  | attn_v 1 8 | o8    k8    router norm
  expect_table(m, names, qwen3moe_ne, {
      {"Q2_K",   {q3_k, q3_k, q3_k, q3_k, q3_k,   q2_k, q2_k,   q4_k, q4_k,   q3_k, q2_k,   f32, f32}},
      {"Q2_K_S", {q4_k, q4_k, q2_k, q2_k, q2_k,   q2_k, q2_k,   q4_k, q4_k,   q2_k, q2_k,   f32, f32}},
      {"Q3_K_S", {q3_k, q3_k, q3_k, q3_k, q3_k,   q3_k, q3_k,   q3_k, q3_k,   q3_k, q3_k,   f32, f32}},
      {"Q3_K_M", {q5_k, q4_k, q4_k, q4_k, q4_k,   q3_k, q3_k,   q5_k, q4_k,   q4_k, q3_k,   f32, f32}},
      {"Q3_K_L", {q5_k, q5_k, q5_k, q5_k, q5_k,   q3_k, q3_k,   q5_k, q5_k,   q5_k, q3_k,   f32, f32}},
      {"Q4_K_S", {q5_k, q5_k, q4_k, q4_k, q4_k,   q4_k, q4_k,   q5_k, q4_k,   q4_k, q4_k,   f32, f32}},
      {"Q4_K_M", {q6_k, q6_k, q4_k, q6_k, q6_k,   q4_k, q4_k,   q6_k, q6_k,   q4_k, q4_k,   f32, f32}},
      {"Q5_K_M", {q6_k, q6_k, q5_k, q6_k, q6_k,   q5_k, q5_k,   q6_k, q6_k,   q5_k, q5_k,   f32, f32}},
      {"IQ4_XS", {q5_k, q5_k, iq4_xs, iq4_xs, iq4_xs, iq4_xs, iq4_xs, q5_k, q5_k, iq4_xs, iq4_xs, f32, f32}},
      {"Q8_0",   {q8_0, q8_0, q8_0, q8_0, q8_0,   q8_0, q8_0,   q8_0, q8_0,   q8_0, q8_0,   f32, f32}},
  });
}

// Mixtral-8x7B: 32 layers, 32 query heads over 8 KV heads (n_gqa 4), 8 experts of 14336. Exactly 8
// experts: attn_v and attn_k Q8_0, attn_output q5_K in the low-bit mixes (Q3_K_L not among them).
TEST(gguf_recipe, eight_experts_get_llama_cpps_bumps) {
  const gguf_recipe_model m{.n_layers = 32, .n_gqa = 4, .n_experts = 8};
  const auto ne_of = [](const std::string& name) -> ne_t {
    if (name.find("ffn_down_exps") != std::string::npos) return {14336, 4096, 8};
    if (name.find("attn_k.") != std::string::npos || name.find("attn_v.") != std::string::npos) return {4096, 1024};
    return {4096, 4096};
  };
  const std::vector<std::string> names = {"blk.0.attn_v.weight", "blk.10.attn_v.weight", "blk.10.attn_k.weight",
                                          "blk.10.attn_output.weight", "blk.10.ffn_down_exps.weight",
                                          "blk.10.attn_q.weight"};
  expect_table(m, names, ne_of, {
      {"Q2_K",   {q8_0, q8_0, q8_0, q5_k, q3_k, q2_k}},
      {"Q3_K_M", {q8_0, q8_0, q8_0, q5_k, q4_k, q3_k}},
      {"Q3_K_L", {q8_0, q8_0, q8_0, q3_k, q5_k, q3_k}},
      {"Q4_K_M", {q8_0, q8_0, q8_0, q5_k, q4_k, q4_k}},
      {"Q5_K_M", {q8_0, q8_0, q8_0, q5_k, q5_k, q5_k}},
      {"Q6_K",   {q8_0, q8_0, q8_0, q6_k, q6_k, q6_k}},
      {"IQ4_XS", {q8_0, q8_0, q8_0, q5_k, iq4_xs, iq4_xs}},
  });
}

// Llama-2-70B: 80 layers, 64 query heads over 8 KV heads. attn_v's q3_K/q4_K become q5_K (n/8 = 10;
// use_more_bits holds for layers 0 and 15, not 11); the other tensors keep their mix's types.
TEST(gguf_recipe, llama_70b_attn_v_gets_q5_k) {
  model_config c;
  c.architecture = "llama", c.n_layers = 80, c.n_heads = 64, c.n_kv_heads = 8, c.shared_classifier = false;
  const gguf_recipe_model m = gguf_recipe_model_of(c);
  EXPECT_TRUE(m.type_70b);
  EXPECT_EQ(m.n_gqa, 8);
  const auto ne_of = [](const std::string& name) -> ne_t {
    return name.find("attn_v") != std::string::npos ? ne_t{8192, 1024} : ne_t{28672, 8192};
  };
  const std::vector<std::string> names = {"blk.0.attn_v.weight", "blk.11.attn_v.weight", "blk.15.attn_v.weight",
                                          "blk.11.ffn_down.weight"};
  expect_table(m, names, ne_of, {
      {"Q2_K",   {q5_k, q5_k, q5_k, q3_k}},
      {"Q3_K_S", {q5_k, q5_k, q5_k, q3_k}},
      {"Q3_K_M", {q5_k, q5_k, q5_k, q4_k}},
      {"Q4_K_S", {q5_k, q5_k, q5_k, q4_k}},
      {"Q4_K_M", {q6_k, q5_k, q6_k, q4_k}},
      {"Q4_0",   {q4_0, q4_0, q4_0, q4_0}},
  });
  c.n_kv_heads = 64;  // Llama-65B: no GQA, not llama.cpp's 70B type
  EXPECT_FALSE(gguf_recipe_model_of(c).type_70b);
  c.architecture = "qwen2", c.n_kv_heads = 8;  // Qwen2-72B is typed 70B
  EXPECT_TRUE(gguf_recipe_model_of(c).type_70b);
  c.architecture = "qwen3";
  EXPECT_FALSE(gguf_recipe_model_of(c).type_70b);
}

// attn_qkv (fused Q/K/V) is attn_v-like in current llama.cpp: attn_v's rules and counter.
TEST(gguf_recipe, fused_qkv_takes_attn_vs_rules) {
  const gguf_recipe_model m{.n_layers = 22, .n_gqa = 8};
  const ne_t ne = {2048, 2560};
  EXPECT_EQ(pick("Q4_K_M", m, "blk.0.attn_qkv.weight", ne), q6_k);
  EXPECT_EQ(pick("Q4_K_M", m, "blk.2.attn_qkv.weight", ne), q4_k);
  EXPECT_EQ(pick("Q3_K_M", m, "blk.1.attn_qkv.weight", ne), q5_k);
  EXPECT_EQ(pick("Q3_K_M", m, "blk.2.attn_qkv.weight", ne), q4_k);
  EXPECT_EQ(pick("Q2_K", m, "blk.9.attn_qkv.weight", ne), q4_k);
}

// A tied embedding is the classifier: it takes output.weight's rules.
TEST(gguf_recipe, tied_embedding_takes_the_classifiers_type) {
  const gguf_recipe_model tied{.n_layers = 22, .n_gqa = 8, .tied_embeddings = true};
  const gguf_recipe_model untied{.n_layers = 22, .n_gqa = 8};
  const ne_t ne = {2048, 32000};
  EXPECT_EQ(pick("Q4_K_M", tied, "token_embd.weight", ne), q6_k);
  EXPECT_EQ(pick("Q4_K_M", untied, "token_embd.weight", ne), q4_k);
  EXPECT_EQ(pick("Q2_K", tied, "token_embd.weight", ne), q6_k);
  EXPECT_EQ(pick("Q8_0", tied, "token_embd.weight", ne), q8_0);
  EXPECT_EQ(pick("F16", tied, "token_embd.weight", ne), f16);
}

// Rows of 288 weights (whole 32-weight blocks, not 256-weight ones) and of 100 (neither).
TEST(gguf_recipe, rows_that_are_not_whole_blocks_fall_back) {
  const gguf_recipe_model m{.n_layers = 8, .n_gqa = 4};
  const ne_t r288 = {288, 288}, r100 = {100, 288};
  EXPECT_EQ(pick("Q4_K_M", m, "blk.2.attn_q.weight", r288), q5_0);
  EXPECT_EQ(pick("Q4_K_M", m, "blk.0.attn_v.weight", r288), q8_0) << "q6_K (use_more_bits) -> q8_0";
  EXPECT_EQ(pick("Q5_K_S", m, "blk.2.attn_q.weight", r288), q5_1);
  EXPECT_EQ(pick("Q2_K", m, "blk.2.attn_q.weight", r288), q4_0);
  EXPECT_EQ(pick("Q2_K", m, "blk.2.ffn_down.weight", r288), q4_0) << "q3_K -> q4_0";
  EXPECT_EQ(pick("Q3_K_S", m, "blk.2.attn_q.weight", r288), q4_0);
  EXPECT_EQ(pick("IQ4_XS", m, "blk.2.attn_q.weight", r288), iq4_nl);
  EXPECT_EQ(pick("Q6_K", m, "blk.2.attn_q.weight", r288), q8_0);
  EXPECT_EQ(pick("pure:Q4_K", m, "blk.2.attn_q.weight", r288), q5_0);
  // The classifier: Q8_0 where the ftype's block does not tile the row; q6_K then q8_0 where it does.
  EXPECT_EQ(pick("Q4_K_M", m, "output.weight", r288), q8_0);
  EXPECT_EQ(pick("Q4_0", m, "output.weight", r288), q8_0);
  EXPECT_EQ(pick("Q4_0", m, "output.weight", r100), f16);
  EXPECT_EQ(pick("Q4_K_M", m, "blk.2.attn_q.weight", r100), f16);
  EXPECT_EQ(pick("Q4_0", m, "blk.2.attn_q.weight", r100), f16);
  EXPECT_EQ(pick("Q4_0", m, "blk.2.attn_q.weight", r288), q4_0);
}

TEST(gguf_recipe, names_parse_as_llama_quantize_spells_them) {
  for (const auto& [alias, mix] :
       {std::pair{"Q3_K", "Q3_K_M"}, std::pair{"Q4_K", "Q4_K_M"}, std::pair{"Q5_K", "Q5_K_M"}}) {
    EXPECT_EQ(gguf_recipe_parse(alias)->rules, gguf_recipe_parse(mix)->rules) << alias;
    EXPECT_EQ(gguf_recipe_parse(alias)->name, alias);
  }
  EXPECT_EQ(gguf_recipe_parse("Q2_K_S")->rules, gguf_recipe::mix::q2_k_s);
  EXPECT_EQ(gguf_recipe_parse("Q2_K_S")->base, q2_k);
  EXPECT_EQ(gguf_recipe_parse("Q3_K_L")->base, q3_k);
  EXPECT_EQ(gguf_recipe_parse("pure:Q3_K")->rules, gguf_recipe::mix::plain);
  EXPECT_EQ(gguf_recipe_parse("pure:Q3_K")->base, q3_k);
  EXPECT_EQ(gguf_recipe_parse("BF16")->rules, gguf_recipe::mix::plain);
  EXPECT_EQ(gguf_recipe_parse("q4_k_m")->rules, gguf_recipe::mix::q4_k_m) << "any case, as llama-quantize";
  EXPECT_EQ(gguf_recipe_parse("pure:q4_K")->base, q4_k);
  for (const char* bad : {"Q9_K", "Q6_K_M", "Q8_0_S", "pure:Q4_K_M", "pure:", ""})
    EXPECT_FALSE(gguf_recipe_parse(bad)) << bad;
}

}  // namespace
}  // namespace pagedserve
