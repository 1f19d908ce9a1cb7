// Every llama-quantize mix gguf_recipe writes (gguf_recipe_test checks which type each tensor gets)
// loads through the normal GGUF loader with every matrix of its file's type (packed: views of the file,
// or row panels where this CPU's table has them), and decodes: a few greedy tokens through the forward
// pass on the blocks as stored (the best kernel table) track the same file exactly dequantized to f32
// (--quantize f32, scalar table) on every logit, so each greedy pick is the f32 model's best token up to
// twice that bound. A llama (GQA 4, untied, 8 layers: the "first eighth" rules fire on layer 0) and a
// qwen3moe (8 experts: llama.cpp's 8-expert bumps; tied) and a qwen2moe (its shared expert too) of dims
// that tile 256-weight blocks.
//
// Tolerance: the packed path quantizes activations (8-bit, per block) and the f32 reference does not,
// so their logits differ by the activations' rounding, relative to the logits: measured 0.3-2.8% of
// the largest |logit| over these 40 files (0 for F32/F16, 0.4% BF16), about gguf_arch_test's 3% bound
// for Q8_0 weights. The bound is 5% of the largest |logit|; a block decoded with the wrong layout or
// scale moves the logits by about 100% of it.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "model/block_panels_load.hpp"
#include "model/ggml_blocks.hpp"
#include "model/gguf_model.hpp"
#include "model/gguf_random_model.hpp"
#include "model/hf_test_model.hpp"
#include "model/prefill_logits.hpp"

namespace pagedserve {
namespace {

// Every ftype llama-quantize writes for these families that the loader reads.
constexpr const char* all_ftypes[] = {"F32",    "F16",    "BF16",   "Q4_0",   "Q4_1",   "Q5_0",   "Q5_1",
                                      "Q8_0",   "Q2_K",   "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S",
                                      "Q4_K_M", "Q5_K_S", "Q5_K_M", "Q6_K",   "IQ4_NL", "IQ4_XS"};

constexpr double relative_tolerance = 0.05;  // of the largest |logit| (see the top)

model_config tiny_config(const std::string& architecture) {
  model_config c;
  c.architecture = architecture;
  c.dim = 256, c.hidden_dim = 512, c.n_layers = 8, c.n_heads = 8, c.n_kv_heads = 2, c.head_dim = 32;
  c.vocab_size = 300, c.seq_len = 64, c.shared_classifier = false;
  if (architecture == "qwen3moe") {
    c.n_layers = 4, c.shared_classifier = true;
    c.n_experts = 8, c.n_experts_used = 8, c.expert_hidden_dim = 256, c.norm_topk_prob = true;
  }
  if (architecture == "qwen2moe") {  // 4 experts, all used, beside a shared expert
    c.n_layers = 2, c.n_experts = 4, c.n_experts_used = 4, c.expert_hidden_dim = 256, c.shared_expert_hidden_dim = 512;
  }
  return c;
}

// Greedy decode through the forward pass: the prompt as one prefill step, then one-token decode steps
// over the same paged cache. Returns the tokens (prompt then n_new picks) and the logits [position]
// of every position but the last.
struct decoded {
  std::vector<token_id> tokens;
  std::vector<std::vector<float>> logits;
};

decoded greedy_decode(const model& m, const kernels::kernel_table& kt, std::vector<token_id> prompt, int n_new) {
  constexpr int block_size = 16;
  const int vocab = m.config.vocab_size, n_total = static_cast<int>(prompt.size()) + n_new;
  kv_cache cache(m.config.n_layers, (n_total + block_size - 1) / block_size, block_size, m.config.n_kv_heads,
                 m.config.head_size());
  forward_pass forward(m, kt, n_total);
  decoded out{std::move(prompt), {}};
  int first = 0;
  while (static_cast<int>(out.tokens.size()) < n_total) {
    const int n = static_cast<int>(out.tokens.size());
    const step_batch b = test::one_sequence_step(out.tokens, first, block_size);
    const float* logits = forward.run(b, cache);
    for (int r = 0; r < b.n_tokens(); ++r) out.logits.emplace_back(logits + r * vocab, logits + (r + 1) * vocab);
    const std::vector<float>& last = out.logits.back();
    out.tokens.push_back(static_cast<token_id>(std::max_element(last.begin(), last.end()) - last.begin()));
    first = n;
  }
  return out;
}

// The matrices the forward pass multiplies, each with the file tensor it was loaded from.
std::vector<std::pair<const weight*, std::string>> matrices_of(const model& m) {
  std::vector<std::pair<const weight*, std::string>> out;
  out.emplace_back(&m.classifier, m.classifier == m.token_embedding ? "token_embd.weight" : "output.weight");
  for (int l = 0; l < m.config.n_layers; ++l) {
    const layer_weights& w = m.layers[l];
    const std::string at = "blk." + std::to_string(l) + ".";
    for (const auto& [x, name] : {std::pair{&w.wq, "attn_q"}, std::pair{&w.wk, "attn_k"}, std::pair{&w.wv, "attn_v"},
                                  std::pair{&w.wo, "attn_output"}})
      out.emplace_back(x, at + name + ".weight");
    if (w.experts.empty()) {
      for (const auto& [x, name] : {std::pair{&w.w_gate, "ffn_gate"}, std::pair{&w.w_up, "ffn_up"},
                                    std::pair{&w.w_down, "ffn_down"}})
        out.emplace_back(x, at + name + ".weight");
    } else {
      out.emplace_back(&w.experts.back().gate, at + "ffn_gate_exps.weight");
      out.emplace_back(&w.experts.back().up, at + "ffn_up_exps.weight");
      out.emplace_back(&w.experts.back().down, at + "ffn_down_exps.weight");
    }
    if (w.has_shared_expert()) {
      out.emplace_back(&w.shared_expert.gate, at + "ffn_gate_shexp.weight");
      out.emplace_back(&w.shared_expert.up, at + "ffn_up_shexp.weight");
      out.emplace_back(&w.shared_expert.down, at + "ffn_down_shexp.weight");
    }
  }
  return out;
}

class gguf_mix_load : public testing::TestWithParam<std::string> {};

TEST_P(gguf_mix_load, every_ftype_loads_as_stored_and_decodes_like_its_dequantized_weights) {
  const model_config c = tiny_config(GetParam());
  const kernels::kernel_table& best = *kernels::kernel_table_select();
  const kernels::kernel_table& scalar = *kernels::kernel_table_select("scalar");
  for (const char* ftype : all_ftypes) {
    SCOPED_TRACE(ftype);
    gguf_writer w;
    gguf_add_random_model(w, c, *gguf_recipe_parse(ftype), 11);
    const auto path = test::temp_dir(c.architecture + "_mix_" + ftype + ".gguf");
    ASSERT_TRUE(w.write(path).has_value());
    auto file = gguf_file::open(path);
    auto packed = gguf_model_load(path);
    auto exact = gguf_model_load(path, {.weights = weight_format::f32});
    ASSERT_TRUE(file && packed && exact) << (!file ? file.error() : !packed ? packed.error() : exact.error());

    // Written as the recipe picks, tensor by tensor.
    const gguf_recipe_model shape = gguf_recipe_model_of(c);
    for (const gguf_tensor_info& t : file->tensors())
      EXPECT_EQ(*dtype_of_ggml_type(t.type), gguf_recipe_type(*gguf_recipe_parse(ftype), shape, t.name, t.ne)) << t.name;

    // Loaded as stored: every matrix the file's type (the mix's types, not one), in panels where this
    // CPU's table has them for that type; the f32 load dequantized every one.
    std::vector<std::string> types;
    for (const auto& [x, name] : matrices_of(**packed)) {
      const gguf_tensor_info* t = file->tensor(name);
      ASSERT_TRUE(t) << name;
      EXPECT_EQ(x->type, *dtype_of_ggml_type(t->type)) << name;
      if (name.find("_exps") == std::string::npos) {  // experts stay slices of their 3-D tensors
        EXPECT_EQ(x->panel_rows != 0, block_panels_here(x->type)) << name;
      }
      if (std::find(types.begin(), types.end(), dtype_name(x->type)) == types.end()) types.emplace_back(dtype_name(x->type));
    }
    for (const auto& [x, name] : matrices_of(**exact)) {
      EXPECT_EQ(x->type, dtype::f32) << name;
    }

    const std::vector<token_id> prompt = {1, 17, 42, 5, 96};
    const decoded got = greedy_decode(**packed, best, prompt, 4);
    const std::vector<float> want = test::prefill_logits(**exact, scalar, got.tokens);
    const std::size_t vocab = static_cast<std::size_t>(c.vocab_size);
    ASSERT_EQ(got.logits.size() * vocab, want.size() - vocab);
    double worst = 0, scale = 0, worst_pick = 0;
    for (std::size_t p = 0; p < got.logits.size(); ++p) {
      const float* ref = want.data() + p * vocab;
      for (std::size_t v = 0; v < vocab; ++v) {
        worst = std::max(worst, static_cast<double>(std::abs(got.logits[p][v] - ref[v])));
        scale = std::max(scale, static_cast<double>(std::abs(ref[v])));
      }
      if (p + 1 >= prompt.size()) {  // a greedy pick: within the tolerance of the reference's best
        const double best_ref = *std::max_element(ref, ref + vocab);
        worst_pick = std::max(worst_pick, best_ref - ref[got.tokens[p + 1]]);
      }
    }
    std::string mix;
    for (const std::string& t : types) mix += (mix.empty() ? "" : " ") + t;
    std::printf("[ %s %s ] %s: max |packed - dequantized f32| %.2g (max |logit| %.2f, %.1f%%), greedy pick %.2g below best\n",
                c.architecture.c_str(), ftype, mix.c_str(), worst, scale, 100 * worst / scale, worst_pick);
    const double bound = relative_tolerance * scale;
    EXPECT_LE(worst, bound);
    EXPECT_LE(worst_pick, 2 * bound);
    EXPECT_GE(scale, 0.3) << "logits far from 0, so the bound is not met by a model that outputs nothing";
    std::filesystem::remove(path);
  }
}

INSTANTIATE_TEST_SUITE_P(all, gguf_mix_load, testing::Values("llama", "qwen3moe", "qwen2moe"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace pagedserve
