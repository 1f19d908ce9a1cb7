#pragma once
// The OpenAI-compatible API's responses, encoded as JSON text: completion and chat completion
// objects, their streaming chunks (the payload of one SSE "data:" line), logprobs in each
// endpoint's shape, errors, /v1/models, /tokenize and /detokenize. Pure functions, unit-tested.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "api/openai_request.hpp"
#include "pagedserve/generation_events.hpp"
#include "pagedserve/request.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve::openai {

// What every chunk and response of one request repeats.
struct response_meta {
  endpoint kind = endpoint::completions;
  std::string id;           // "cmpl-..." or "chatcmpl-..."
  std::int64_t created = 0;  // Unix seconds
  std::string model;
};

// A choice's new output (streaming) or all of it (non-streaming).
struct choice_piece {
  int index = 0;
  std::string text;                      // valid UTF-8
  std::vector<token_id> ids;             // the tokens behind it (for logprobs)
  std::vector<token_logprobs> logprobs;  // parallel to ids when logprobs were asked, else empty
  std::optional<std::string> finish_reason;  // "stop" / "length" once finished, else null
  bool with_role = false;                // chat streaming: this is the choice's first delta
  std::size_t text_offset = 0;           // completions logprobs: text bytes before this piece's first token
  std::string reasoning;                 // chat: reasoning_content
  // chat: tool calls. In a stream chunk, a call with an id is a call's first delta (index, id, type,
  // name, arguments as given: "" by OpenAI's convention); one without an id appends its arguments.
  std::vector<tool_call> tool_calls;
};

// Everything encoders need beyond the pieces.
struct encode_options {
  const tokenizer* vocabulary = nullptr;  // token strings for logprobs
  bool logprobs = false;                  // report logprobs
  bool usage_null = false;                // stream chunks carry "usage": null (stream_options.include_usage)
};

std::string new_response_id(endpoint kind);
std::string_view finish_reason_text(finish_reason r);  // stop, length; cancelled -> "abort"

std::string encode_error(const api_error& e);
// The X-Ignored-Fields header's value: the names joined by ", ", each reduced to visible ASCII and
// clipped (they are client text going into a header), at most 16 of them then "...".
std::string ignored_fields_header(const std::vector<std::string>& names);
// One stream chunk: object text_completion or chat.completion.chunk with one choice.
std::string encode_chunk(const response_meta& m, const choice_piece& c, const encode_options& o);
// The stream's last chunk with stream_options.include_usage: "choices": [] and the usage.
std::string encode_usage_chunk(const response_meta& m, const usage& u);
// A whole non-streaming response: object text_completion or chat.completion.
std::string encode_response(const response_meta& m, const std::vector<choice_piece>& choices, const usage& u,
                            const encode_options& o);

// Logprobs of a piece: completions {"tokens","token_logprobs","top_logprobs","text_offset"};
// chat {"content":[{"token","logprob","bytes","top_logprobs":[...]}]}.
std::string encode_logprobs(endpoint kind, const choice_piece& c, const tokenizer& vocabulary);

struct model_card {
  std::string id;          // the name clients send as "model"
  std::string root;        // the model file's name
  std::int64_t created = 0;
  int max_model_len = 0;
};
std::string encode_model(const model_card& card);
std::string encode_models(const std::vector<model_card>& cards);
std::string encode_tokenize(const std::vector<token_id>& ids, int max_model_len,
                            const std::vector<std::string>* token_strs);
std::string encode_detokenize(std::string_view text);

}  // namespace pagedserve::openai
