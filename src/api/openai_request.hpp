#pragma once
// The OpenAI-compatible API's requests: JSON bodies of POST /v1/completions, /v1/chat/completions,
// /tokenize and /detokenize parsed and validated (simdjson) into plain structs, and the OpenAI
// error object every failure becomes. Pure functions: no sockets, so every bad input is unit-tested.
//
// A top-level argument this server does not know on the generation endpoints is accepted and
// ignored, as vLLM does (clients written for llama.cpp or vLLM send cache_prompt, samplers, top_a...):
// the request names them in ignored_fields, which the server logs once per client and reports in an
// X-Ignored-Fields header. A known argument with a bad value is still a 400; /tokenize and
// /detokenize still refuse unknown arguments.
#include <cstddef>
#include <cstdint>
#include <expected>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/ids.hpp"
#include "pagedserve/sampling.hpp"
#include "pagedserve/engine_error.hpp"
#include "pagedserve/generate_command.hpp"  // chat_message

namespace pagedserve::openai {

// An OpenAI error object with its HTTP status: {"error":{"message","type","param","code"}}.
struct api_error {
  int status = 400;
  std::string message;
  std::string type = "invalid_request_error";
  std::string param;  // the offending argument; empty = null
  std::string code;   // stable, machine-readable; empty = null
};

enum class endpoint { completions, chat_completions };

// One prompt of a completions request: text (tokenized with BOS) or token ids used as given.
struct prompt_input {
  std::optional<std::string> text;
  std::vector<token_id> ids;  // when text is empty
};

// logit_bias names at most this many distinct tokens (OpenAI's documented bound; the sampler adds
// each entry to every token's logits).
inline constexpr std::size_t max_logit_bias_entries = 300;

// What the parsers need to know about the served model.
struct parse_limits {
  int vocab_size = 0;   // token ids (prompt, logit_bias) must be below this
  int max_n = 16;       // choices per prompt
  int max_choices = 64; // choices per request: n times the number of prompts
  int max_logprobs = 20; // alternatives per token (logprobs, top_logprobs)
  // What a request starts from before its own fields (the model's generation_config.json defaults);
  // legacy completions still default to 16 tokens, as OpenAI's and vLLM's.
  sampling_params defaults;
};

struct generation_request {
  endpoint kind = endpoint::completions;
  std::string model;                   // empty: the served model
  std::vector<prompt_input> prompts;   // completions: one or more (choice index = prompt * n + i)
  std::vector<chat_message> messages;  // chat
  sampling_params params;              // max_tokens 0: the rest of the context
  int n = 1;                           // choices per prompt
  bool stream = false;
  bool include_usage = false;          // stream_options.include_usage
  bool echo = false;                   // completions: the prompt's text before each choice's text
  bool logprobs = false;               // report logprobs (params.logprobs holds how many alternatives)
  std::string user;                    // accepted, logged by nobody
  chat_options chat;                   // chat: tools, tool_choice, chat_template_kwargs, ...
  std::vector<std::string> ignored_fields;  // unknown top-level arguments, in the body's order
};

std::expected<generation_request, api_error> parse_completion_request(std::string_view body, const parse_limits& limits);
std::expected<generation_request, api_error> parse_chat_request(std::string_view body, const parse_limits& limits);

// POST /tokenize (vLLM's shape): {"prompt": str, "add_special_tokens"?: bool, "return_token_strs"?: bool}
struct tokenize_request {
  std::string model;
  std::string prompt;
  bool add_special_tokens = true;  // BOS first, as a completions prompt gets it
  bool return_token_strs = false;
};
// POST /detokenize: {"tokens": [ids]}
struct detokenize_request {
  std::string model;
  std::vector<token_id> tokens;
};

std::expected<tokenize_request, api_error> parse_tokenize_request(std::string_view body);
std::expected<detokenize_request, api_error> parse_detokenize_request(std::string_view body, const parse_limits& limits);

// The HTTP status and OpenAI error for a request the engine ended with an error (engine_error_table).
api_error error_from_engine(const engine_failure& e);

}  // namespace pagedserve::openai
