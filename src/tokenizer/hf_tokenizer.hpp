#pragma once
// Hugging Face tokenizers as people download them: a tokenizer.json (and the tokenizer_config.json
// beside it), so a model folder from the Hub is served with the vocabulary it was trained with.
#include <expected>
#include <filesystem>
#include <memory>
#include <string>

#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

// Loads a tokenizer.json, or a folder holding one. Supported: BPE models, byte-level (GPT-2, Qwen2/3,
// Llama 3) or SentencePiece-style with byte fallback (Llama 2, TinyLlama, Mistral); normalizers NFC,
// NFD, NFKC, NFKD, Prepend, Replace (string pattern) and Sequence; pre-tokenizers Split (PCRE2
// regex or string), ByteLevel, Metaspace, Digits and Sequence; added tokens with their
// lstrip/rstrip/single_word/normalized flags; post-processors TemplateProcessing, ByteLevel and
// Sequence; decoders ByteLevel, Replace, ByteFallback, Fuse, Strip, Metaspace and Sequence.
// tokenizer_config.json beside it, when present, names bos_token, eos_token, add_bos_token and
// clean_up_tokenization_spaces. Anything else is a clear error naming what is unsupported.
//
// encode(text, add_bos) matches added tokens written in the text and puts the BOS id first when
// add_bos, the tokenizer has a BOS and tokenizer_config.json does not say add_bos_token=false
// (so Llama 2 and 3 get one, Qwen3 none); encode_with_special_tokens applies the file's
// post-processor instead (Hugging Face add_special_tokens=true). decode() applies
// clean_up_tokenization_spaces when the config asks for it; streaming never does, as it cannot
// see the next token.
// decode_piece(prev, id) renders special tokens too (Hugging Face skip_special_tokens=false) and
// treats prev < 0 as the start of a sequence, where a SentencePiece decoder strips one leading space.
std::expected<std::unique_ptr<tokenizer>, std::string> hf_tokenizer_load(const std::filesystem::path& path);

// Picks the loader by what `path` holds: a folder with tokenizer.json, a JSON file, a GGUF file (its
// embedded tokenizer, gguf_model.hpp), or else a llama2.c tokenizer.bin (whose format needs
// `vocab_size_hint`, the model's vocabulary size; 0 or less means "every token in the file").
std::expected<std::unique_ptr<tokenizer>, std::string> tokenizer_load_any(const std::filesystem::path& path,
                                                                          int vocab_size_hint);

}  // namespace pagedserve
