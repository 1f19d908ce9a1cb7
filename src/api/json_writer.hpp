#pragma once
// The one place JSON text is escaped and numbers are written: every encoder (WebSocket frames,
// OpenAI responses and stream chunks, errors, /health, the load generator) appends through these,
// so all of them agree byte for byte.
#include <string>
#include <string_view>

namespace pagedserve {

// Appends s to out as a JSON string literal (quotes included). s must be valid UTF-8: its bytes are
// copied, only '"', '\\' and control characters are escaped (\n \r \t, else \u00XX in lower case).
void json_append_string(std::string& out, std::string_view s);
// Appends v as a JSON number, the shortest text that reads back as the float. JSON has no NaN or
// infinities: -inf (a logprob of a token the sampler ruled out) becomes -9999.0, which the OpenAI
// SDKs read as "never", and NaN or +inf become 0.
void json_append_number(std::string& out, float v);

}  // namespace pagedserve
