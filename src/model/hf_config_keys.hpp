#pragma once
// Which config.json keys each architecture reads, which it may ignore, and which it refuses: the one
// table behind "nothing misread is served". config_parse reads the keys of `read_keys`; a key of
// `refused_keys` whose value is not the neutral one is a load error naming it; a key in none of the
// tables is logged as unknown (transformers adds keys every release; most are bookkeeping).
// Spellings of transformers 4.x and 5.x both appear (rope_scaling/rope_theta and rope_parameters,
// num_experts and num_local_experts, torch_dtype and dtype).
#include <span>
#include <string_view>

namespace pagedserve::hf {

// The architectures config.json's `architectures` may name (GPT-2 is not of the Llama family).
enum class family { llama, mistral, mixtral, qwen2, qwen2_moe, qwen3, qwen3_moe, gpt2 };

// A set of families, as bits.
enum families : unsigned {
  f_llama = 1u << static_cast<unsigned>(family::llama),
  f_mistral = 1u << static_cast<unsigned>(family::mistral),
  f_mixtral = 1u << static_cast<unsigned>(family::mixtral),
  f_qwen2 = 1u << static_cast<unsigned>(family::qwen2),
  f_qwen2_moe = 1u << static_cast<unsigned>(family::qwen2_moe),
  f_qwen3 = 1u << static_cast<unsigned>(family::qwen3),
  f_qwen3_moe = 1u << static_cast<unsigned>(family::qwen3_moe),
  f_gpt2 = 1u << static_cast<unsigned>(family::gpt2),
  f_qwen = f_qwen2 | f_qwen2_moe | f_qwen3 | f_qwen3_moe,
  f_qwen_moe = f_qwen2_moe | f_qwen3_moe,
  f_llama_family = f_llama | f_mistral | f_mixtral | f_qwen,
};

constexpr unsigned family_bit(family f) { return 1u << static_cast<unsigned>(f); }

// Per-architecture defaults where the transformers config classes differ.
struct architecture_entry {
  std::string_view name;  // architectures[0]
  family arch;
  bool tie_word_embeddings;  // the config class's default when the key is absent
  int head_dim;              // the default head width when absent; 0 = hidden_size / num_attention_heads
  bool qkv_bias;             // q/k/v projections always carry biases (Qwen2)
  bool has_attention_bias;   // attention_bias = true is implemented (q/k/v/o biases)
  bool qk_norm;              // per-head q_norm / k_norm
  double rope_theta;         // the config class's rope_theta when the config has none
};

inline constexpr architecture_entry architectures[] = {
    {"LlamaForCausalLM", family::llama, false, 0, false, true, false, 10000.0},
    {"MistralForCausalLM", family::mistral, false, 0, false, false, false, 10000.0},
    {"MixtralForCausalLM", family::mixtral, false, 0, false, false, false, 1000000.0},
    {"Qwen2ForCausalLM", family::qwen2, false, 0, true, false, false, 10000.0},
    {"Qwen2MoeForCausalLM", family::qwen2_moe, false, 0, true, false, false, 10000.0},  // 5.x: qkv_bias may turn them off
    {"Qwen3ForCausalLM", family::qwen3, false, 128, false, true, true, 10000.0},
    {"Qwen3MoeForCausalLM", family::qwen3_moe, false, 128, false, true, true, 10000.0},
    {"GPT2LMHeadModel", family::gpt2, true, 0, true, false, false, 0.0},  // read by gpt2_config: biases everywhere
};

// Keys that shape the arithmetic and are read (with the families that read them).
struct read_key {
  std::string_view key;
  unsigned families;
};

inline constexpr read_key read_keys[] = {
    {"architectures", f_llama_family},
    {"hidden_size", f_llama_family},
    {"intermediate_size", f_llama_family},
    {"num_hidden_layers", f_llama_family},
    {"num_attention_heads", f_llama_family},
    {"num_key_value_heads", f_llama_family},
    {"head_dim", f_llama_family},
    {"vocab_size", f_llama_family},
    {"max_position_embeddings", f_llama_family},
    {"rms_norm_eps", f_llama_family},
    {"hidden_act", f_llama_family},
    {"tie_word_embeddings", f_llama_family},
    {"rope_theta", f_llama_family},               // 4.x
    {"rope_scaling", f_llama_family},             // 4.x
    {"rope_parameters", f_llama_family},          // 5.x: rope_theta, rope_type and scaling in one dict
    {"original_max_position_embeddings", f_llama_family},  // overrides the rope dict's, as transformers 5
    {"partial_rotary_factor", f_llama_family},    // must be 1
    {"attention_bias", f_llama | f_qwen3 | f_qwen3_moe},
    {"mlp_bias", f_llama},                        // must be false
    {"sliding_window", f_mistral | f_mixtral | f_qwen},
    {"use_sliding_window", f_qwen},
    {"max_window_layers", f_qwen},
    {"layer_types", f_mistral | f_mixtral | f_qwen},  // full_attention / sliding_attention per layer
    {"num_experts", f_qwen_moe},                  // 4.x (and Qwen2-MoE's 5.x)
    {"num_local_experts", f_qwen3_moe | f_mixtral},  // Qwen3-MoE's 5.x, Mixtral's always
    {"num_experts_per_tok", f_qwen_moe | f_mixtral},
    {"moe_intermediate_size", f_qwen_moe},        // Mixtral's experts are intermediate_size wide
    {"norm_topk_prob", f_qwen_moe},               // Mixtral always renormalises
    {"decoder_sparse_step", f_qwen_moe},
    {"mlp_only_layers", f_qwen_moe},
    {"shared_expert_intermediate_size", f_qwen2_moe},
    {"qkv_bias", f_qwen2_moe},                    // 5.x
    {"bos_token_id", f_llama_family | f_gpt2},
    {"eos_token_id", f_llama_family | f_gpt2},
    // GPT-2 (GPT2Config's names)
    {"architectures", f_gpt2},
    {"n_embd", f_gpt2},
    {"n_layer", f_gpt2},
    {"n_head", f_gpt2},
    {"n_positions", f_gpt2},
    {"n_inner", f_gpt2},
    {"vocab_size", f_gpt2},
    {"layer_norm_epsilon", f_gpt2},
    {"activation_function", f_gpt2},
    {"tie_word_embeddings", f_gpt2},
    {"reorder_and_upcast_attn", f_gpt2},  // an fp16 upcast only: attention is fp32 here throughout
};

// Keys that never change what the forward pass computes (training, bookkeeping, the stored dtype,
// which the tensors themselves declare).
inline constexpr std::string_view ignored_keys[] = {
    "model_type", "transformers_version", "_name_or_path", "torch_dtype", "dtype", "initializer_range",
    "use_cache", "pad_token_id", "attention_dropout", "output_attentions", "output_hidden_states", "return_dict",
    "pretraining_tp",  // Llama 2's tensor-parallel slicing of the same matmuls
    "router_aux_loss_coef", "output_router_logits", "router_jitter_noise", "id2label", "label2id", "torchscript",
    "use_bfloat16", "tf_legacy_loss", "pruned_heads", "chunk_size_feed_forward", "is_encoder_decoder", "is_decoder",
    "tie_encoder_decoder", "add_cross_attention", "problem_type", "finetuning_task", "task_specific_params",
    "bad_words_ids", "begin_suppress_tokens", "decoder_start_token_id", "sep_token_id", "prefix",
    "cross_attention_hidden_size", "suppress_tokens", "tokenizer_class", "auto_map", "embd_pdrop", "resid_pdrop",
    "mlp_only_layers_dropout", "max_length", "min_length", "do_sample", "early_stopping", "num_beams",
    "num_beam_groups", "diversity_penalty", "temperature", "top_k", "top_p", "typical_p", "repetition_penalty",
    "length_penalty", "no_repeat_ngram_size", "encoder_no_repeat_ngram_size", "num_return_sequences",
    "output_scores", "return_dict_in_generate", "forced_bos_token_id", "forced_eos_token_id",
    "remove_invalid_values", "exponential_decay_length_penalty", "use_return_dict",
    // GPT-2's dropouts, sequence-summary head (not the LM head) and its old name for n_positions
    "attn_pdrop", "summary_type", "summary_use_proj", "summary_activation", "summary_proj_to_labels",
    "summary_first_dropout", "n_ctx",
};

// What a refused key's value must be for the model to be served.
enum class neutral {
  absent,          // any non-null value is refused
  is_false,        // only false
  is_one,          // only the number 1
  is_silu,         // only the string "silu"
  is_true,         // only true
  is_gelu_tanh,    // only "gelu_new" or "gelu_pytorch_tanh" (the tanh approximation)
};

struct refused_key {
  std::string_view key;
  unsigned families;
  neutral ok;
  std::string_view why;  // what the value would change
};

inline constexpr refused_key refused_keys[] = {
    {"partial_rotary_factor", f_llama_family, neutral::is_one, "RoPE over part of each head is not supported by the forward pass"},
    {"hidden_act", f_llama_family, neutral::is_silu, "only the SiLU-gated MLP is implemented"},
    {"mlp_bias", f_llama_family, neutral::is_false, "MLP biases are not supported by the forward pass"},
    {"attention_bias", f_mistral | f_mixtral | f_qwen2 | f_qwen2_moe, neutral::is_false,
     "this architecture's attention has no such biases in transformers"},
    {"attn_logit_softcapping", f_llama_family, neutral::absent, "attention logit soft-capping is not supported by the forward pass"},
    {"final_logit_softcapping", f_llama_family, neutral::absent, "final logit soft-capping is not supported by the forward pass"},
    {"quantization_config", f_llama_family, neutral::absent,
     "pre-quantized checkpoints (GPTQ, AWQ, bitsandbytes, fp8) are not read; use the unquantized folder or a GGUF"},
    {"shared_expert_intermediate_size", f_llama_family & ~f_qwen2_moe, neutral::absent,
     "shared experts are Qwen2-MoE's; this architecture has none in transformers"},
    {"query_pre_attn_scalar", f_llama_family, neutral::absent, "a custom attention scale is not supported by the forward pass"},
    {"attention_multiplier", f_llama_family, neutral::absent, "Granite-style multipliers are not supported by the forward pass"},
    {"embedding_multiplier", f_llama_family, neutral::absent, "Granite-style multipliers are not supported by the forward pass"},
    {"residual_multiplier", f_llama_family, neutral::absent, "Granite-style multipliers are not supported by the forward pass"},
    {"logits_scaling", f_llama_family, neutral::absent, "Granite-style multipliers are not supported by the forward pass"},
    {"no_rope_layers", f_llama_family, neutral::absent, "layers without RoPE are not supported by the forward pass"},
    {"use_qk_norm", f_llama | f_mistral | f_mixtral | f_qwen2 | f_qwen2_moe, neutral::is_false,
     "q/k norms are not supported for this architecture"},
    {"sliding_window", f_llama, neutral::absent, "LlamaForCausalLM has no sliding window in transformers"},
    {"layer_types", f_llama, neutral::absent, "LlamaForCausalLM has no per-layer attention types in transformers"},
    {"activation_function", f_gpt2, neutral::is_gelu_tanh, "only the tanh-approximated GELU is implemented"},
    {"scale_attn_weights", f_gpt2, neutral::is_true, "unscaled attention scores are not supported by the forward pass"},
    {"scale_attn_by_inverse_layer_idx", f_gpt2, neutral::is_false, "per-layer attention scaling is not supported by the forward pass"},
    {"add_cross_attention", f_gpt2, neutral::is_false, "cross-attention (encoder-decoder) is not supported by the forward pass"},
    {"quantization_config", f_gpt2, neutral::absent,
     "pre-quantized checkpoints (GPTQ, AWQ, bitsandbytes, fp8) are not read; use the unquantized folder or a GGUF"},
};

// Keys of a rope_scaling / rope_parameters dict, per rope_type (transformers' validators).
inline constexpr std::string_view rope_common_keys[] = {"rope_type", "type", "rope_theta", "partial_rotary_factor"};
inline constexpr std::string_view rope_linear_keys[] = {"factor"};
inline constexpr std::string_view rope_llama3_keys[] = {"factor", "original_max_position_embeddings", "low_freq_factor",
                                                        "high_freq_factor"};
inline constexpr std::string_view rope_yarn_keys[] = {"factor",    "original_max_position_embeddings",
                                                      "attention_factor", "beta_fast", "beta_slow", "mscale",
                                                      "mscale_all_dim", "truncate"};

}  // namespace pagedserve::hf
