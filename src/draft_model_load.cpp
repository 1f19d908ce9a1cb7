#include "draft_model_load.hpp"

#include <fmt/format.h>

#include "model/gguf_model.hpp"
#include "model/served_model.hpp"
#include "model/model_load.hpp"
#include "tokenizer/hf_tokenizer.hpp"

namespace pagedserve {
namespace {

// The draft's own tokenizer where its files carry one (GGUF, a Hugging Face folder); null for a
// llama2.c checkpoint, which has none and runs with the served model's.
std::expected<std::shared_ptr<const tokenizer>, std::string> draft_tokenizer_load(const std::filesystem::path& path,
                                                                                  int vocab_size) {
  if (gguf_file_is(path)) return gguf_tokenizer_load(path);
  if (std::filesystem::is_directory(path)) return tokenizer_load_any(path, vocab_size);
  return nullptr;
}

}  // namespace

std::expected<std::shared_ptr<const model>, std::string> draft_model_load(const config& c, const served_model& target) {
  const speculative_config& spec = c.engine.speculative;
  if (spec.method != "draft_model") return nullptr;
  const std::string where = "engine.speculative_config.model " + spec.model + ": ";
  const std::string same_tokenizer = ": a draft model must share the served model's tokenizer";
  const std::optional<weight_format> format = weight_format_parse(c.model.quantize);  // quantized as the served one
  auto draft = model_load_any(spec.model, {.weights = format.value_or(weight_format::as_stored)});
  if (!draft) return std::unexpected(where + draft.error());
  const int target_vocab = target.weights->config.vocab_size, draft_vocab = (*draft)->config.vocab_size;
  if (draft_vocab != target_vocab)
    return std::unexpected(where + fmt::format("its vocabulary has {} tokens, the served model's {}{}", draft_vocab,
                                               target_vocab, same_tokenizer));
  auto tok = draft_tokenizer_load(spec.model, draft_vocab);
  if (!tok) return std::unexpected(where + "cannot load its tokenizer: " + tok.error());
  if (*tok) {
    const tokenizer &mine = **tok, &served = *target.vocabulary;
    if (mine.vocab_size() != served.vocab_size())
      return std::unexpected(where + fmt::format("its tokenizer has {} tokens, the served model's {}{}",
                                                 mine.vocab_size(), served.vocab_size(), same_tokenizer));
    for (int id = 0; id < served.vocab_size(); ++id)
      if (mine.token_text(id) != served.token_text(id))
        return std::unexpected(where + fmt::format("token {} is \"{}\" in its tokenizer, \"{}\" in the served model's{}",
                                                   id, mine.token_text(id), served.token_text(id), same_tokenizer));
  }
  return *draft;
}

}  // namespace pagedserve
