#include "pagedserve/served_model.hpp"

#include "pagedserve/demo_model.hpp"
#include "pagedserve/hf_tokenizer.hpp"
#include "pagedserve/model_load.hpp"

namespace pagedserve {

std::expected<served_model, std::string> served_model_load(const model_paths& paths) {
  if (paths.model.empty()) {
    auto [m, tok] = demo_model_make();
    return served_model{std::move(m), std::move(tok), nullptr};
  }
  const std::filesystem::path model_path = paths.model;
  auto m = model_load_any(model_path);
  if (!m) return std::unexpected("cannot load model: " + m.error());
  // A folder carries its tokenizer; a llama2.c checkpoint looks for tokenizer.bin beside it.
  const bool is_dir = std::filesystem::is_directory(model_path);
  std::filesystem::path tok_path = paths.tokenizer;
  if (tok_path.empty()) tok_path = is_dir ? model_path : model_path.parent_path() / "tokenizer.bin";
  auto tok = tokenizer_load_any(tok_path, (*m)->config.vocab_size);
  if (!tok) return std::unexpected("cannot load tokenizer: " + tok.error());
  if ((*tok)->vocab_size() > (*m)->config.vocab_size)
    return std::unexpected("tokenizer " + tok_path.string() + " has " + std::to_string((*tok)->vocab_size()) +
                           " tokens but the model only " + std::to_string((*m)->config.vocab_size));
  served_model out{std::move(*m), std::move(*tok), nullptr};
  const auto config_json = (is_dir ? model_path : tok_path.parent_path()) / "tokenizer_config.json";
  if (std::filesystem::exists(config_json)) {
    auto cfg = chat_template_load(config_json);
    if (!cfg) return std::unexpected(cfg.error());
    if (cfg->chat_template) {
      auto renderer = chat_template::parse(*cfg->chat_template);
      if (!renderer) return std::unexpected(config_json.string() + ": chat template: " + renderer.error());
      out.chat = std::make_shared<const chat_setup>(chat_setup{std::move(*renderer), cfg->bos_token, cfg->eos_token});
    }
  }
  return out;
}

}  // namespace pagedserve
