#pragma once
// Speculative decoding's draft model (engine.speculative_config.model), loaded beside the served one
// by the same loaders (any format they read, quantized as the served model is). It proposes token ids
// the target verifies, so it must share the target's tokenizer: a draft whose vocabulary differs is
// refused with the first difference.
#include <expected>
#include <memory>
#include <string>

#include "model/served_model.hpp"

namespace pagedserve {

// Null when the config asks for no draft model.
std::expected<std::shared_ptr<const model>, std::string> draft_model_load(const config& c, const served_model& target);

}  // namespace pagedserve
