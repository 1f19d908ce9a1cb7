#pragma once
// One small random-weight model per supported Hugging Face architecture and feature (rope scaling,
// biases, sliding windows, MoE routing): the cases every architecture test runs.
#include <vector>

#include "model/hf_test_model.hpp"

namespace pagedserve::test {

inline std::vector<arch_spec> arch_specs() {
  std::vector<arch_spec> v;
  {  // Llama 3 style: rope_scaling llama3 (every band: kept, blended, slowed), MQA 3:1, untied
    arch_spec s = make_spec("llama3", "LlamaForCausalLM", 48, 52, 2, 3, 1, 0);
    s.theta = 10000.0;
    s.llama3_scaling = true;
    v.push_back(s);
  }
  {  // Llama with attention_bias (q/k/v/o biases), tied, MHA, odd widths
    arch_spec s = make_spec("llama_bias", "LlamaForCausalLM", 40, 37, 2, 4, 4, 0);
    s.attention_bias = true;
    s.tied = true;
    s.eps = 1e-5;
    v.push_back(s);
  }
  {  // Mistral: GQA, rope_theta 1e6
    arch_spec s = make_spec("mistral", "MistralForCausalLM", 32, 45, 2, 4, 2, 0);
    s.theta = 1e6;
    v.push_back(s);
  }
  {  // Mistral with a 3-token sliding window (the 8-token prompt runs past it in every layer)
    arch_spec s = make_spec("mistral_window", "MistralForCausalLM", 32, 45, 2, 4, 2, 0);
    s.sliding_window = 3;
    v.push_back(s);
  }
  {  // Qwen2 with use_sliding_window: layer 0 full attention, layer 1 a 4-token window
    arch_spec s = make_spec("qwen2_window", "Qwen2ForCausalLM", 32, 40, 2, 4, 2, 0);
    s.qkv_bias = true;
    s.sliding_window = 4, s.max_window_layers = 1;
    v.push_back(s);
  }
  {  // Qwen3 with YaRN: factor 4 over a 16-token original context (every band: kept, ramped, slowed)
    arch_spec s = make_spec("qwen3_yarn", "Qwen3ForCausalLM", 32, 40, 2, 2, 1, 32);
    s.qk_norm = true;
    s.theta = 10000.0;
    s.yarn_scaling = true, s.factor = 4.0, s.original_max_pos = 16;
    v.push_back(s);
  }
  {  // Llama with YaRN and an explicit attention_factor
    arch_spec s = make_spec("llama_yarn", "LlamaForCausalLM", 32, 40, 2, 4, 2, 0);
    s.yarn_scaling = true, s.factor = 2.0, s.original_max_pos = 64, s.yarn_attention_factor = 1.3;
    v.push_back(s);
  }
  {  // Qwen2: q/k/v biases, tied
    arch_spec s = make_spec("qwen2", "Qwen2ForCausalLM", 32, 40, 2, 4, 2, 0);
    s.qkv_bias = true;
    s.tied = true;
    s.theta = 1e6;
    v.push_back(s);
  }
  {  // Qwen3: q_norm/k_norm, head_dim 16 != 40 / 4, tied
    arch_spec s = make_spec("qwen3", "Qwen3ForCausalLM", 40, 48, 3, 4, 2, 16);
    s.qk_norm = true;
    s.tied = true;
    s.theta = 1e6;
    v.push_back(s);
  }
  {  // Qwen3-MoE: 8 experts, top-2 renormalised, layer 1 dense (mlp_only_layers), head_dim 12
    arch_spec s = make_spec("qwen3_moe", "Qwen3MoeForCausalLM", 32, 44, 3, 4, 2, 12);
    s.qk_norm = true;
    s.experts = 8, s.top_k = 2, s.moe_hidden = 20, s.norm_topk = true;
    s.mlp_only_layers = {1};
    v.push_back(s);
  }
  {  // Qwen3-MoE: top-3 not renormalised, decoder_sparse_step 2 (only layer 1 sparse), tied
    arch_spec s = make_spec("qwen3_moe_step2", "Qwen3MoeForCausalLM", 32, 36, 3, 2, 1, 16);
    s.qk_norm = true;
    s.tied = true;
    s.experts = 6, s.top_k = 3, s.moe_hidden = 17, s.sparse_step = 2;
    v.push_back(s);
  }
  {  // Mixtral: every layer 4 experts of intermediate_size, top-2 renormalised, block_sparse_moe's w1/w2/w3
    arch_spec s = make_spec("mixtral", "MixtralForCausalLM", 32, 24, 2, 4, 2, 0);
    s.theta = 1e6;
    s.experts = 4, s.top_k = 2, s.moe_hidden = 24, s.norm_topk = true;
    v.push_back(s);
  }
  {  // Qwen2-MoE: q/k/v biases, top-2 not renormalised, a shared expert gated by a sigmoid
    arch_spec s = make_spec("qwen2_moe", "Qwen2MoeForCausalLM", 32, 40, 2, 4, 2, 0);
    s.qkv_bias = true;
    s.experts = 4, s.top_k = 2, s.moe_hidden = 16, s.shared_hidden = 24;
    v.push_back(s);
  }
  return v;
}

}  // namespace pagedserve::test
