#pragma once
// What `serve` and `generate` use for what the user left unset, from the data shipped with the program
// (share_dir.hpp): the default model, stories260K (Karpathy's MIT-licensed TinyStories model, 260K
// parameters, English children's stories) with its tokenizer tok512, and the chat page. The random-
// weight demo model is served only when asked for (--demo-model).
#include <expected>
#include <filesystem>
#include <optional>
#include <string>

#include "pagedserve/config.hpp"

namespace pagedserve {

// Fills c.model (when c.model.model is empty and demo_model is false) and c.server.web_root (when
// empty) from share. Returns the log line that says which model is served and why, or why the
// default model cannot be found.
std::expected<std::string, std::string> shipped_defaults_apply(config& c, bool demo_model,
                                                               const std::optional<std::filesystem::path>& share);

}  // namespace pagedserve
