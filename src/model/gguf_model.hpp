#pragma once
// Models and tokenizers from GGUF files as llama.cpp's converters write them.
//
// Architectures (general.architecture): llama (Llama 2/3, Mistral, TinyLlama), qwen2, qwen3,
// qwen3moe. Tensor types: F32, F16 and BF16 are used in place from the mapping; Q8_0 and Q4_0 are
// dequantized at load (to fp32, or bf16 when options.weights asks for it). llama.cpp's converter
// permutes Q/K rows of llama-arch models to the interleaved RoPE pair layout, so those run with
// rope_style::interleaved; the Qwen families keep Hugging Face's rotate-half (neox) layout.
// A rope_freqs.weight tensor (Llama 3.1's rope scaling, precomputed) divides the frequencies.
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "model/gguf.hpp"
#include "pagedserve/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

// Errors name the file and the missing key, the missing or misshapen tensor, or the tensor whose
// type is not supported (with its ggml type number).
std::expected<std::shared_ptr<const model>, std::string> gguf_model_load(const std::filesystem::path& path,
                                                                         const model_load_options& options = {});
// The file (every split of a split model) mapped and its metadata read, as a load phase: for loading
// the model and its tokenizer from one mapping (gguf_model_from, gguf_tokenizer_from).
std::expected<gguf_file, std::string> gguf_file_map(const std::filesystem::path& path);
std::expected<std::shared_ptr<const model>, std::string> gguf_model_from(const gguf_file& file,
                                                                         const model_load_options& options = {});

// The embedded tokenizer (tokenizer.ggml.*): model "llama" (SentencePiece vocabulary with scores and
// byte fallback) or "gpt2" (byte-level BPE with merges; tokenizer.ggml.pre picks the pre-tokenizer:
// qwen2, llama-bpe/llama3, else GPT-2's). Built on the Hugging Face tokenizer pipeline
// (hf_tokenizer.hpp), configured as the equivalent tokenizer.json would be.
std::expected<std::unique_ptr<tokenizer>, std::string> gguf_tokenizer_from(const gguf_file& file);
std::expected<std::unique_ptr<tokenizer>, std::string> gguf_tokenizer_load(const std::filesystem::path& path);

// tokenizer.chat_template, when the file has one.
std::optional<std::string> gguf_chat_template(const gguf_file& file);

}  // namespace pagedserve
