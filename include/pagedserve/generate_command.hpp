#pragma once
// A generation as the engine takes it, whatever protocol asked for it: the WebSocket protocol and
// the OpenAI API both parse their requests into these.
#include <optional>
#include <string>
#include <vector>

#include "pagedserve/ids.hpp"
#include "pagedserve/request.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {

struct chat_message {
  std::string role;
  std::string content;
};

struct generate_command {
  std::string id;  // the client's name for it (logs; the WebSocket protocol's "id")
  std::optional<std::string> prompt;
  std::optional<std::vector<token_id>> prompt_ids;  // a pre-tokenized prompt, used as is (no BOS added)
  std::vector<chat_message> messages;
  sampling_params params;      // max_tokens 0 when the client gave none (filled from the context left)
  std::optional<sample_group> group;  // one of n samples of the prompt (OpenAI n > 1)
};

}  // namespace pagedserve
