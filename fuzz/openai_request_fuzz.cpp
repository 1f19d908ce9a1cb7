// Bodies of POST /v1/completions, /v1/chat/completions, /tokenize and /detokenize: every parser sees
// the same bytes, as a client may send anything to any endpoint. Each must return a request or an
// api_error, never crash.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "api/openai_request.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  namespace oa = pagedserve::openai;
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  const oa::parse_limits limits{.vocab_size = 32000};
  (void)oa::parse_completion_request(body, limits);
  (void)oa::parse_chat_request(body, limits);
  (void)oa::parse_tokenize_request(body);
  (void)oa::parse_detokenize_request(body, limits);
  return 0;
}
