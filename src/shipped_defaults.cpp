#include "shipped_defaults.hpp"

namespace pagedserve {

std::expected<std::string, std::string> shipped_defaults_apply(config& c, bool demo_model,
                                                               const std::optional<std::filesystem::path>& share) {
  if (c.server.web_root.empty() && share) c.server.web_root = (*share / "web").string();
  if (demo_model) {
    if (!c.model.model.empty())
      return std::unexpected("--demo-model and a model (" + c.model.model + ") exclude each other");
    return std::string("serving the random-weight demo model (--demo-model): its output is gibberish by design");
  }
  if (!c.model.model.empty()) return "serving " + c.model.model + " (named on the command line or in the config)";
  const std::filesystem::path model = share ? *share / "models" / "stories260K.bin" : std::filesystem::path();
  std::error_code ec;
  if (!share || !std::filesystem::is_regular_file(model, ec))
    return std::unexpected(
        "no model given and the default model (share/pagedserve/models/stories260K.bin, installed beside the binary) "
        "is missing: name one (pagedserve serve MODEL) or pass --demo-model for random weights");
  c.model.model = model.string();
  if (c.model.tokenizer.empty()) c.model.tokenizer = (*share / "models" / "tok512.bin").string();
  return "no model given: serving the default model stories260K (a 260K-parameter English TinyStories model, MIT) from " +
         model.string() + "; name another as pagedserve serve MODEL";
}

}  // namespace pagedserve
