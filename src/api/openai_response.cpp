// Encodes OpenAI responses by hand: their shapes are fixed and small, and the text is already
// UTF-8 (the incremental detokenizer guarantees it; token pieces go through utf8_sanitize).
#include "api/openai_response.hpp"

#include <cmath>
#include <random>

#include "api/json_writer.hpp"
#include "pagedserve/utf8.hpp"  // utf8_sanitize: token pieces may be partial characters

namespace pagedserve::openai {
namespace {

void append_head(std::string& out, const response_meta& m, std::string_view object) {
  out += R"({"id":)";
  json_append_string(out, m.id);
  out += R"(,"object":")";
  out += object;
  out += R"(","created":)" + std::to_string(m.created) + R"(,"model":)";
  json_append_string(out, m.model);
}

void append_usage(std::string& out, const usage& u) {
  out += R"({"prompt_tokens":)" + std::to_string(u.prompt_tokens) + R"(,"completion_tokens":)" +
         std::to_string(u.completion_tokens) + R"(,"total_tokens":)" +
         std::to_string(u.prompt_tokens + u.completion_tokens);
  // Speculative decoding's proposals, in the fields OpenAI reports for Predicted Outputs.
  if (u.spec_draft_tokens > 0)
    out += R"(,"completion_tokens_details":{"accepted_prediction_tokens":)" + std::to_string(u.spec_accepted_tokens) +
           R"(,"rejected_prediction_tokens":)" + std::to_string(u.spec_draft_tokens - u.spec_accepted_tokens) + "}";
  out += "}";
}

void append_nullable(std::string& out, const std::optional<std::string>& s) {
  if (s) json_append_string(out, *s);
  else out += "null";
}

void append_tool_call(std::string& out, const tool_call& call, bool stream) {
  out += stream ? R"({"index":)" + std::to_string(call.index) + "," : std::string("{");
  if (!call.id.empty()) {
    out += R"("id":)";
    json_append_string(out, call.id);
    out += R"(,"type":"function","function":{"name":)";
    json_append_string(out, call.name);
    out += ',';
  } else {
    out += R"("function":{)";
  }
  out += R"("arguments":)";
  json_append_string(out, call.arguments);
  out += "}}";
}

void append_tool_calls(std::string& out, const std::vector<tool_call>& calls, bool stream) {
  out += R"(,"tool_calls":[)";
  for (std::size_t i = 0; i < calls.size(); ++i) {
    if (i) out += ',';
    append_tool_call(out, calls[i], stream);
  }
  out += ']';
}

// A chat choice's message (whole response) or delta (stream): content, reasoning_content, tool_calls.
void append_chat_message(std::string& out, const choice_piece& c, bool stream) {
  out += stream ? R"(,"delta":{)" : R"(,"message":{)";
  if (c.with_role || !stream) out += R"("role":"assistant",)";
  out += R"("content":)";
  // A reply of tool calls only has a null content (OpenAI); a delta of reasoning or calls has none.
  if (c.text.empty() && (!c.tool_calls.empty() || !c.reasoning.empty())) out += "null";
  else json_append_string(out, c.text);
  if (!c.reasoning.empty()) {
    out += R"(,"reasoning_content":)";
    json_append_string(out, c.reasoning);
  }
  if (!c.tool_calls.empty()) append_tool_calls(out, c.tool_calls, stream);
  out += "}";
}

// One choice object; stream selects "delta" (chat) and a null finish_reason while running.
void append_choice(std::string& out, endpoint kind, const choice_piece& c, const encode_options& o, bool stream) {
  out += R"({"index":)" + std::to_string(c.index);
  if (kind == endpoint::completions) {
    out += R"(,"text":)";
    json_append_string(out, c.text);
  } else {
    append_chat_message(out, c, stream);
  }
  out += R"(,"logprobs":)";
  if (o.logprobs && o.vocabulary && !c.ids.empty()) out += encode_logprobs(kind, c, *o.vocabulary);
  else out += "null";
  out += R"(,"finish_reason":)";
  append_nullable(out, c.finish_reason);
  out += "}";
}

void append_bytes(std::string& out, std::string_view raw) {
  out += '[';
  for (std::size_t i = 0; i < raw.size(); ++i) {
    if (i) out += ',';
    out += std::to_string(static_cast<unsigned char>(raw[i]));
  }
  out += ']';
}

}  // namespace

std::string new_response_id(endpoint kind) {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char hex[] = "0123456789abcdef";
  std::string id = kind == endpoint::completions ? "cmpl-" : "chatcmpl-";
  std::uint64_t a = rng(), b = rng();
  for (int i = 0; i < 16; ++i, a >>= 4) id += hex[a & 15];
  for (int i = 0; i < 16; ++i, b >>= 4) id += hex[b & 15];
  return id;
}

std::string_view finish_reason_text(finish_reason r) {
  return r == finish_reason::cancelled ? "abort" : finish_reason_name(r);
}

std::string encode_error(const api_error& e) {
  std::string out = R"({"error":{"message":)";
  json_append_string(out, e.message);
  out += R"(,"type":)";
  json_append_string(out, e.type);
  out += R"(,"param":)";
  append_nullable(out, e.param.empty() ? std::nullopt : std::optional(e.param));
  out += R"(,"code":)";
  append_nullable(out, e.code.empty() ? std::nullopt : std::optional(e.code));
  out += "}}";
  return out;
}

std::string ignored_fields_header(const std::vector<std::string>& names) {
  constexpr std::size_t max_names = 16, max_name_bytes = 64;
  std::string out;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (i) out += ", ";
    if (i == max_names) return out + "...";
    for (const char c : names[i].substr(0, max_name_bytes)) out += c > ' ' && c < 0x7f && c != ',' ? c : '?';
  }
  return out;
}

std::string encode_chunk(const response_meta& m, const choice_piece& c, const encode_options& o) {
  std::string out;
  out.reserve(256 + c.text.size());
  append_head(out, m, m.kind == endpoint::completions ? "text_completion" : "chat.completion.chunk");
  out += R"(,"choices":[)";
  append_choice(out, m.kind, c, o, true);
  out += "]";
  if (o.usage_null) out += R"(,"usage":null)";
  out += "}";
  return out;
}

std::string encode_usage_chunk(const response_meta& m, const usage& u) {
  std::string out;
  append_head(out, m, m.kind == endpoint::completions ? "text_completion" : "chat.completion.chunk");
  out += R"(,"choices":[],"usage":)";
  append_usage(out, u);
  out += "}";
  return out;
}

std::string encode_response(const response_meta& m, const std::vector<choice_piece>& choices, const usage& u,
                            const encode_options& o) {
  std::string out;
  append_head(out, m, m.kind == endpoint::completions ? "text_completion" : "chat.completion");
  out += R"(,"choices":[)";
  for (std::size_t i = 0; i < choices.size(); ++i) {
    if (i) out += ',';
    append_choice(out, m.kind, choices[i], o, false);
  }
  out += R"(],"usage":)";
  append_usage(out, u);
  out += "}";
  return out;
}

std::string encode_logprobs(endpoint kind, const choice_piece& c, const tokenizer& vocabulary) {
  auto piece = [&](token_id id) { return vocabulary.token_text(id); };
  std::string out;
  const std::size_t n = std::min(c.ids.size(), c.logprobs.size());
  if (kind == endpoint::chat_completions) {
    out += R"({"content":[)";
    for (std::size_t i = 0; i < n; ++i) {
      if (i) out += ',';
      const std::string raw = piece(c.ids[i]);
      out += R"({"token":)";
      json_append_string(out, utf8_sanitize(raw));
      out += R"(,"logprob":)";
      json_append_number(out, c.logprobs[i].logprob);
      out += R"(,"bytes":)";
      append_bytes(out, raw);
      out += R"(,"top_logprobs":[)";
      for (std::size_t k = 0; k < c.logprobs[i].top.size(); ++k) {
        if (k) out += ',';
        const auto& [alt, lp] = c.logprobs[i].top[k];
        const std::string alt_raw = piece(alt);
        out += R"({"token":)";
        json_append_string(out, utf8_sanitize(alt_raw));
        out += R"(,"logprob":)";
        json_append_number(out, lp);
        out += R"(,"bytes":)";
        append_bytes(out, alt_raw);
        out += "}";
      }
      out += "]}";
    }
    out += "]}";
    return out;
  }
  std::string tokens = "[", values = "[", tops = "[", offsets = "[";
  std::size_t offset = c.text_offset;
  for (std::size_t i = 0; i < n; ++i) {
    const char* sep = i ? "," : "";
    const std::string text = utf8_sanitize(piece(c.ids[i]));
    tokens += sep;
    json_append_string(tokens, text);
    values += sep;
    json_append_number(values, c.logprobs[i].logprob);
    tops += sep;
    tops += '{';
    for (std::size_t k = 0; k < c.logprobs[i].top.size(); ++k) {
      if (k) tops += ',';
      json_append_string(tops, utf8_sanitize(piece(c.logprobs[i].top[k].first)));
      tops += ':';
      json_append_number(tops, c.logprobs[i].top[k].second);
    }
    tops += '}';
    offsets += sep + std::to_string(offset);
    offset += text.size();
  }
  out += R"({"tokens":)" + tokens + R"(],"token_logprobs":)" + values + R"(],"top_logprobs":)" + tops +
         R"(],"text_offset":)" + offsets + "]}";
  return out;
}

std::string encode_model(const model_card& card) {
  std::string out = R"({"id":)";
  json_append_string(out, card.id);
  out += R"(,"object":"model","created":)" + std::to_string(card.created) + R"(,"owned_by":"pagedserve","root":)";
  json_append_string(out, card.root);
  out += R"(,"parent":null,"max_model_len":)" + std::to_string(card.max_model_len) + "}";
  return out;
}

std::string encode_models(const std::vector<model_card>& cards) {
  std::string out = R"({"object":"list","data":[)";
  for (std::size_t i = 0; i < cards.size(); ++i) {
    if (i) out += ',';
    out += encode_model(cards[i]);
  }
  return out + "]}";
}

std::string encode_tokenize(const std::vector<token_id>& ids, int max_model_len,
                            const std::vector<std::string>* token_strs) {
  std::string out = R"({"count":)" + std::to_string(ids.size()) + R"(,"max_model_len":)" +
                    std::to_string(max_model_len) + R"(,"tokens":[)";
  for (std::size_t i = 0; i < ids.size(); ++i) out += (i ? "," : "") + std::to_string(ids[i]);
  out += "]";
  if (token_strs) {
    out += R"(,"token_strs":[)";
    for (std::size_t i = 0; i < token_strs->size(); ++i) {
      if (i) out += ',';
      json_append_string(out, utf8_sanitize((*token_strs)[i]));
    }
    out += "]";
  }
  return out + "}";
}

std::string encode_detokenize(std::string_view text) {
  std::string out = R"({"prompt":)";
  json_append_string(out, utf8_sanitize(text));
  return out + "}";
}

}  // namespace pagedserve::openai
