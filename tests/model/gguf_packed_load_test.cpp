// GGUF files with a llama.cpp mix of block types (Q4_K_M: q4_K with q6_K tensors) load packed: every
// matrix a view into the file mapping of the type its tensor has, no per-weight copy (the model's own
// heap is its fp32 norms), MoE experts slices of their 3-D tensors; --quantize f32/bf16/int8 still
// convert them; a tensor type or row length the loader cannot read is refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "model/block_panels_load.hpp"
#include "model/ggml_block_panels.hpp"
#include "model/hf_test_model.hpp"
#include "model/ggml_blocks.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_random_model.hpp"
#include "model/hf_test_model.hpp"

namespace pagedserve {
namespace {

model_config small_config(const std::string& architecture, bool tied) {
  model_config c;
  c.architecture = architecture;
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 8, c.n_heads = 8, c.n_kv_heads = 2, c.head_dim = 32;
  c.vocab_size = 300, c.seq_len = 64, c.shared_classifier = tied;
  if (architecture == "qwen3moe") c.n_experts = 6, c.n_experts_used = 2, c.expert_hidden_dim = 256, c.norm_topk_prob = true;
  return c;
}

std::filesystem::path write_random(const model_config& c, const std::string& recipe) {
  gguf_writer w;
  gguf_add_random_model(w, c, *gguf_recipe_parse(recipe), 7);
  const auto path = test::temp_dir(c.architecture + "_" + recipe + ".gguf");
  auto r = w.write(path);
  EXPECT_TRUE(r.has_value()) << r.error();
  return path;
}

// Row `row` of tensor t of the file, decoded by ggml's formula.
std::vector<float> file_row(const gguf_tensor_info& t, std::size_t row) {
  const dtype type = *dtype_of_ggml_type(t.type);
  const int cols = static_cast<int>(t.ne[0]);
  std::vector<float> out(cols);
  weight_row_to_f32(out.data(), weight{t.data + row * block_row_bytes(type, cols), type, 1, cols}, 0);
  return out;
}

std::vector<float> model_row(const weight& w, int row) {
  std::vector<float> out(w.cols);
  weight_row_to_f32(out.data(), w, row);
  return out;
}

TEST(gguf_packed_load, q4_k_m_mix_loads_as_views_of_the_files_types) {
  for (const bool tied : {false, true}) {
    const model_config c = small_config("qwen3", tied);
    const auto path = write_random(c, "Q4_K_M");
    auto m = gguf_model_load(path);
    ASSERT_TRUE(m.has_value()) << m.error();
    auto file = gguf_file::open(path);
    ASSERT_TRUE(file.has_value());
    const model& mm = **m;
    // use_more_bits over 8 layers (the first and last eighth, every third between): 0, 3, 6, 7 get q6_K.
    for (int l = 0; l < c.n_layers; ++l) {
      const bool more = l == 0 || l == 3 || l == 6 || l == 7;
      EXPECT_EQ(mm.layers[l].wv.type, more ? dtype::q6_k : dtype::q4_k) << l;
      EXPECT_EQ(mm.layers[l].w_down.type, more ? dtype::q6_k : dtype::q4_k) << l;
      EXPECT_EQ(mm.layers[l].wq.type, dtype::q4_k) << l;
    }
    EXPECT_EQ(mm.classifier.type, dtype::q6_k);
    EXPECT_EQ(mm.token_embedding.type, tied ? dtype::q6_k : dtype::q4_k);
    EXPECT_EQ(mm.classifier == mm.token_embedding, tied);
    EXPECT_EQ(mm.classifier.panel_rows != 0, block_panels_here(dtype::q6_k)) << "a tied one too: lookups gather rows";
    for (const auto& [w, name, row] : {std::tuple{&mm.layers[4].w_down, "blk.4.ffn_down.weight", 255},
                                       std::tuple{&mm.token_embedding, "token_embd.weight", 299},
                                       std::tuple{&mm.layers[7].wo, "blk.7.attn_output.weight", 17}})
      EXPECT_EQ(model_row(*w, row), file_row(*file->tensor(name), row)) << name;
    // Every byte of every matrix is the file's: the model owns only its fp32 norms and its copies on
    // huge pages of the matrices a step streams (the classifier, tied or not, and the layers'), which
    // replace their mapped bytes: repacked into row panels (ggml_block_panels.hpp, adding zero blocks up
    // to a whole panel of rows) where those pay, else rows as stored.
    std::uint64_t matrix_bytes = 0;
    for (const gguf_tensor_info& t : file->tensors())
      if (t.ne.size() >= 2) matrix_bytes += *t.n_bytes;
    const std::uint64_t norm_bytes = (c.n_layers * (2 * c.dim + 2 * c.head_size()) + c.dim) * sizeof(float);
    std::uint64_t copy_bytes = 0, padding_bytes = 0;
    const auto count_copy = [&](const weight& w) {
      copy_bytes += w.n_bytes();
      padding_bytes += w.n_bytes() - w.rows * block_row_bytes(w.type, w.cols);
    };
    count_copy(mm.classifier);
    for (const layer_weights& l : mm.layers)
      for (const weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) count_copy(*w);
    EXPECT_EQ(model_weight_bytes(mm), matrix_bytes + padding_bytes);
    EXPECT_EQ(mm.owned_bytes, norm_bytes + copy_bytes);
    std::filesystem::remove(path);
  }
}

// A classifier tied to the embedding streams at every step: it is repacked into panels like an untied
// one (where its type's panels pay here), and the embedding views the same copy, its lookups gathering
// the file's rows back.
TEST(gguf_packed_load, tied_classifier_is_packed_and_the_embedding_reads_it) {
  const model_config c = small_config("llama", true);
  const auto path = write_random(c, "Q8_0");
  auto m = gguf_model_load(path);
  ASSERT_TRUE(m.has_value()) << m.error();
  auto file = gguf_file::open(path);
  ASSERT_TRUE(file.has_value());
  const model& mm = **m;
  ASSERT_EQ(mm.classifier.type, dtype::q8_0);
  EXPECT_EQ(mm.classifier.panel_rows != 0, block_panels_here(dtype::q8_0));
  EXPECT_TRUE(mm.classifier == mm.token_embedding);
  for (int row : {0, 17, 299})
    EXPECT_EQ(model_row(mm.token_embedding, row), file_row(*file->tensor("token_embd.weight"), row)) << row;
  std::filesystem::remove(path);
}

// Files of one 32-weight format, iq4_xs, q2_k, q3_k or q6_k ("pure": every matrix that type): every matrix the forward
// pass multiplies is repacked into row panels where this CPU has their kernel (block_panels_here), its
// rows still the file's, and the model owns only its norms and the panels.
TEST(gguf_packed_load, every_matrix_of_a_panel_type_is_loaded_as_panels) {
  const model_config c = small_config("llama", false);
  for (const char* recipe :
       {"pure:Q4_1", "pure:Q5_0", "pure:Q5_1", "pure:IQ4_NL", "pure:IQ4_XS", "pure:Q2_K", "pure:Q3_K", "pure:Q6_K"}) {
    SCOPED_TRACE(recipe);
    const auto path = write_random(c, recipe);
    auto m = gguf_model_load(path);
    ASSERT_TRUE(m.has_value()) << m.error();
    auto file = gguf_file::open(path);
    ASSERT_TRUE(file.has_value());
    const model& mm = **m;
    const dtype t = gguf_recipe_parse(recipe)->base;
    EXPECT_TRUE(block_panels_defined(t));
    std::uint64_t panel_bytes = 0;
    const auto check = [&](const weight& w) {
      EXPECT_EQ(w.type, t);
      EXPECT_EQ(w.panel_rows != 0, block_panels_here(t));
      panel_bytes += w.panel_rows ? w.n_bytes() : 0;
    };
    check(mm.classifier);
    EXPECT_EQ(mm.token_embedding.panel_rows, 0) << "row lookups read the file's layout";
    for (const layer_weights& l : mm.layers)
      for (const weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down}) check(*w);
    for (const auto& [w, name, row] : {std::tuple{&mm.layers[4].w_down, "blk.4.ffn_down.weight", 255},
                                       std::tuple{&mm.classifier, "output.weight", 299},
                                       std::tuple{&mm.layers[7].wk, "blk.7.attn_k.weight", 63}})
      EXPECT_EQ(model_row(*w, row), file_row(*file->tensor(name), row)) << name;
    const std::uint64_t norm_bytes = (c.n_layers * 2 * c.dim + c.dim) * sizeof(float);
    EXPECT_EQ(mm.owned_bytes, norm_bytes + panel_bytes);
    std::filesystem::remove(path);
  }
}

TEST(gguf_packed_load, moe_experts_are_slices_of_their_3d_tensors) {
  const model_config c = small_config("qwen3moe", false);
  const auto path = write_random(c, "Q4_K_M");
  auto m = gguf_model_load(path);
  ASSERT_TRUE(m.has_value()) << m.error();
  auto file = gguf_file::open(path);
  ASSERT_TRUE(file.has_value());
  const layer_weights& l = (*m)->layers[6];
  EXPECT_EQ(l.router.type, dtype::f32) << "llama.cpp never quantizes the router";
  EXPECT_EQ(l.experts[4].gate.type, dtype::q4_k);
  EXPECT_EQ(l.experts[4].down.type, dtype::q6_k) << "ffn_down_exps of a use_more_bits layer";
  EXPECT_EQ(model_row(l.experts[4].gate, 3), file_row(*file->tensor("blk.6.ffn_gate_exps.weight"), 4 * 256 + 3));
  EXPECT_EQ(model_row(l.experts[5].down, 255), file_row(*file->tensor("blk.6.ffn_down_exps.weight"), 5 * 256 + 255));
  EXPECT_EQ(model_row(l.experts[0].up, 0), file_row(*file->tensor("blk.6.ffn_up_exps.weight"), 0));
  std::filesystem::remove(path);
}

TEST(gguf_packed_load, quantize_options_still_convert_block_tensors) {
  const model_config c = small_config("llama", false);
  const auto path = write_random(c, "Q4_K_M");
  auto packed = gguf_model_load(path);
  ASSERT_TRUE(packed.has_value()) << packed.error();
  const weight& q = (*packed)->layers[3].wv;  // q6_K
  for (const auto& [format, type] : {std::pair{weight_format::f32, dtype::f32}, std::pair{weight_format::bf16, dtype::bf16},
                                     std::pair{weight_format::int8, dtype::i8}}) {
    auto m = gguf_model_load(path, {.weights = format});
    ASSERT_TRUE(m.has_value()) << m.error();
    const weight& w = (*m)->layers[3].wv;
    EXPECT_EQ(w.type, type);
    const auto want = model_row(q, 5), got = model_row(w, 5);
    for (int i = 0; i < w.cols; ++i) {
      if (type == dtype::f32) {
        ASSERT_EQ(got[i], want[i]) << i;
      } else if (type == dtype::bf16) {
        ASSERT_EQ(got[i], bf16_to_f32(f32_to_bf16(want[i]))) << i;
      } else {
        ASSERT_NEAR(got[i], want[i], w.scales[5] * 0.5f + 1e-9f) << i;
      }
    }
  }
  std::filesystem::remove(path);
}

TEST(gguf_packed_load, rows_that_are_not_whole_blocks_are_refused_by_name) {
  model_config c = small_config("llama", false);
  c.dim = 288, c.head_dim = 36;  // rows of 288 weights: whole q4_0 blocks, not whole q4_K ones
  gguf_writer w;
  gguf_add_random_model(w, c, *gguf_recipe_parse("pure:Q4_0"), 3);
  auto bytes = w.bytes();
  // Relabel token_embd (type number after its name, n_dims and two dims) from Q4_0 (2) to Q4_K (12).
  const std::string name = "token_embd.weight";
  const auto* n = reinterpret_cast<const std::byte*>(name.data());
  const auto it = std::search(bytes.begin(), bytes.end(), n, n + name.size());
  ASSERT_NE(it, bytes.end());
  const std::uint32_t q4_k = 12;
  std::memcpy(&*it + name.size() + 4 + 2 * 8, &q4_k, 4);
  auto holder = std::make_shared<std::vector<std::byte>>(std::move(bytes));
  auto file = gguf_file::parse(*holder, holder, "bad_rows.gguf");
  std::string error = file ? "" : file.error();
  if (file) {
    auto m = gguf_model_from(*file, {});
    ASSERT_FALSE(m.has_value());
    error = m.error();
  }
  EXPECT_NE(error.find("token_embd.weight"), std::string::npos) << error;
  EXPECT_NE(error.find("Q4_K"), std::string::npos) << error;
  EXPECT_NE(error.find("288"), std::string::npos) << error;
}

}  // namespace
}  // namespace pagedserve
