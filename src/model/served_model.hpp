#pragma once
// Everything the server needs from the files a user points it at: weights, tokenizer, and the chat
// template with its special tokens. One loader for every format (llama2.c .bin + tokenizer .bin, or a
// Hugging Face folder with tokenizer.json and tokenizer_config.json).
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>

#include "chat/chat_template.hpp"
#include "chat/tool_call_family.hpp"
#include "pagedserve/config.hpp"
#include "pagedserve/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

struct chat_setup {
  chat_template renderer;
  std::optional<std::string> bos_token, eos_token;  // as the template names them
  tool_call_family tool_calls = tool_call_family::none;  // the format its template writes calls in
  bool writes_reasoning = false;                         // the template mentions <think>
};

// The chat setup of a template's source.
chat_setup chat_setup_make(chat_template renderer, std::string_view source, std::optional<std::string> bos,
                           std::optional<std::string> eos);

struct served_model {
  std::shared_ptr<const model> weights;
  std::shared_ptr<const tokenizer> vocabulary;
  std::shared_ptr<const chat_setup> chat;  // null: the model has no chat template
};

// paths.model empty: the built-in demo model. Errors name the file and what is wrong with it. Each
// phase logs what it loaded and how long it took; progress shows the weight conversion and may
// cancel the load (throws load_cancelled).
std::expected<served_model, std::string> served_model_load(const model_paths& paths,
                                                           load_progress* progress = nullptr);

// Whether the file starts with the GGUF magic (a GGUF carries its own tokenizer).
bool gguf_file_is(const std::filesystem::path& path);

}  // namespace pagedserve
