#include "draft_model_load.hpp"

#include <fmt/format.h>

namespace pagedserve {

std::expected<std::shared_ptr<const model>, std::string> draft_model_load(const config& c, const served_model& target) {
  const speculative_config& spec = c.engine.speculative;
  if (spec.method != "draft_model") return nullptr;
  const std::string where = "engine.speculative_config.model " + spec.model + ": ";
  model_paths paths = c.model;  // the served model's tokenizer and quantization
  paths.model = spec.model;
  paths.chat_template.clear();
  auto draft = served_model_load(paths);
  if (!draft) return std::unexpected(where + draft.error());
  const int target_vocab = target.weights->config.vocab_size, draft_vocab = draft->weights->config.vocab_size;
  if (draft_vocab != target_vocab || draft->vocabulary->vocab_size() != target.vocabulary->vocab_size())
    return std::unexpected(where + fmt::format("its vocabulary has {} tokens, the served model's {}: a draft model "
                                               "must share the served model's tokenizer",
                                               draft_vocab, target_vocab));
  for (int id = 0; id < target.vocabulary->vocab_size(); ++id)
    if (draft->vocabulary->token_text(id) != target.vocabulary->token_text(id))
      return std::unexpected(where + fmt::format("token {} is \"{}\" in its tokenizer and \"{}\" in the served "
                                                 "model's: a draft model must share the served model's tokenizer",
                                                 id, draft->vocabulary->token_text(id),
                                                 target.vocabulary->token_text(id)));
  return draft->weights;
}

}  // namespace pagedserve
