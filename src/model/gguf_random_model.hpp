#pragma once
// Random-weight models written straight as GGUF in llama.cpp's layout and names (llama (also Mixtral's
// MoE), qwen2, qwen2moe, qwen3, qwen3moe): block-typed matrices are random valid blocks generated while the file is written, so a
// synthetic model of any size (Qwen3-30B-A3B's shape: 17 GB as Q4_K_M) costs no memory to make.
// Tests use it for packed-loading checks; load-tests/make-random-model for full-size benchmarks.
#include <cstdint>

#include "model/gguf_recipe.hpp"
#include "model/gguf_writer.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve {

// How a file holds a MoE layer's experts: one 3-D tensor a projection (ffn_gate_exps, ...; llama.cpp's
// converter since April 2024), or a 2-D tensor an expert (ffn_gate.E, ...: Mixtral files converted before).
enum class gguf_expert_layout { stacked, per_expert };

// Adds c's metadata (c.architecture: "llama", "qwen2", "qwen2moe", "qwen3" or "qwen3moe"; BOS 1, EOS 2) and tensors to
// w, each tensor of the type the recipe picks: block types as random blocks, plain-typed matrices (a plain
// recipe, the MoE router) and qwen2's q/k/v biases N(0, 0.02) values, norms 1. c.n_experts > 0 makes every
// layer a MoE layer; a llama one is Mixtral as the converter writes it (feed_forward_length the expert's
// width, the top-k weights renormalised); a qwen2moe one has c.shared_expert_hidden_dim's shared expert. per_expert takes a plain recipe and gives each expert the
// values it has in the stacked layout.
void gguf_add_random_model(gguf_writer& w, const model_config& c, const gguf_recipe& recipe, std::uint64_t seed,
                           gguf_expert_layout experts = gguf_expert_layout::stacked);

// A byte-fallback SentencePiece vocabulary of vocab_size (>= 259) tokens: <unk>, <s>, </s>, the 256 byte
// pieces, then "▁t<id>" words, so any id decodes and llama.cpp loads the file to run it.
void gguf_add_synthetic_vocab(gguf_writer& w, int vocab_size);

}  // namespace pagedserve
