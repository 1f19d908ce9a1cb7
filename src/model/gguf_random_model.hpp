#pragma once
// Random-weight models written straight as GGUF in llama.cpp's layout and names (llama, qwen2, qwen3,
// qwen3moe): block-typed matrices are random valid blocks generated while the file is written, so a
// synthetic model of any size (Qwen3-30B-A3B's shape: 17 GB as Q4_K_M) costs no memory to make.
// Tests use it for packed-loading checks; load-tests/make-random-model for full-size benchmarks.
#include <cstdint>

#include "model/gguf_recipe.hpp"
#include "model/gguf_writer.hpp"
#include "pagedserve/model.hpp"

namespace pagedserve {

// Adds c's metadata (c.architecture: "llama", "qwen2", "qwen3" or "qwen3moe"; BOS 1, EOS 2) and tensors to
// w, each tensor of the type the recipe picks: block types as random blocks, plain-typed matrices (a plain
// recipe, the MoE router) and qwen2's q/k/v biases N(0, 0.02) values, norms 1. c.n_experts > 0 makes every layer a MoE layer.
void gguf_add_random_model(gguf_writer& w, const model_config& c, const gguf_recipe& recipe, std::uint64_t seed);

// A byte-fallback SentencePiece vocabulary of vocab_size (>= 259) tokens: <unk>, <s>, </s>, the 256 byte
// pieces, then "▁t<id>" words, so any id decodes and llama.cpp loads the file to run it.
void gguf_add_synthetic_vocab(gguf_writer& w, int vocab_size);

}  // namespace pagedserve
