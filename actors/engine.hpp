#pragma once
// The engine: the three long-lived actors wired together, plus what every request actor needs
// (tokenizer, model shape, limits, a request id source). The network edge sees it only through
// engine_api (pagedserve/engine_api.hpp); request actors and tests use the rest.
#include <atomic>
#include <memory>

#include "actors/actor_thread.hpp"
#include "actors/executor_actor.hpp"
#include "actors/kv_allocator_actor.hpp"
#include "actors/scheduler_actor.hpp"
#include "actors/status_board.hpp"
#include "pagedserve/config.hpp"
#include "pagedserve/engine_api.hpp"
#include "metrics/metrics.hpp"
#include "pagedserve/model.hpp"
#include "pagedserve/sampling.hpp"
#include "model/served_model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

class engine final : public engine_api {
 public:
  // Request actors run on `ex` (the network io_context); the scheduler, the KV allocator and the
  // executor share the engine's own thread, so one step follows another without a thread hand-off.
  // chat: the model's chat template (null: `messages` are joined by newlines, as for llama2.c models).
  engine(const boost::asio::any_io_executor& ex, std::shared_ptr<const model> m, std::shared_ptr<const tokenizer> tok,
         const engine_config& config, std::shared_ptr<const chat_setup> chat = nullptr,
         std::shared_ptr<const model> draft = nullptr);  // speculative decoding's draft model, if any
  ~engine() override;  // stops the engine thread before the actors it runs go away

  // The network io_context's executor: request actors make their strands on it.
  const boost::asio::any_io_executor& executor() const { return executor_ex_; }
  scheduler_actor& scheduler() { return scheduler_; }
  kv_allocator_actor& kv_allocator() { return kv_; }
  const tokenizer& vocabulary() const override { return *tokenizer_; }
  const engine_config& config() const { return config_; }
  // Serving metrics (GET /metrics): request actors record into it from any strand.
  serving_metrics& metrics() override { return metrics_; }
  request_id next_request_id() { return request_id{next_id_.fetch_add(1) + 1}; }
  // Tokens one sequence may hold: the model's context, and never more than the whole KV pool.
  int max_sequence_tokens() const;
  // Prompt text longer than this cannot fit max_sequence_tokens() whatever it says: refused before it
  // is tokenized (the longest token's text, times 4 for normalizers that shrink text, per position).
  std::size_t max_prompt_bytes() const { return max_prompt_bytes_; }
  // Ids that end generation: the model's EOS ids (llama2.c checkpoints list BOS too, as run.c stops
  // on it), the tokenizer's EOS and the chat template's end-of-turn token.
  const std::vector<token_id>& stop_token_ids() const { return stop_ids_; }
  const chat_setup* chat() const { return chat_.get(); }
  // Where request actors render chat templates and tokenize prompts: a thread of its own, so a long
  // prompt never holds a network thread (and the sockets it serves) while it is encoded.
  boost::asio::any_io_executor prompt_executor() { return prompt_thread_.executor(); }
  // The sampling parameters a request starts from before its own fields are read
  // (engine_config::generation_config). max_tokens 0: the rest of the context.
  const sampling_params& request_defaults() const override { return request_defaults_; }
  // Tokens a request that sets no max_tokens generates at most: the rest of the context, and no more
  // than generation_config.json's max_new_tokens (under generation_config "auto").
  int default_max_tokens(int n_prompt) const;

  // The scheduler's and the allocator's latest published figures (status_board.hpp); `done` runs
  // once with both, at once, on the caller's thread: it never waits for a running step.
  void report_status(std::function<void(engine_status)> done) override;

  // engine_api: a request actor per generation, on the network io_context.
  std::shared_ptr<generation_handle> submit(generate_command command, std::shared_ptr<client_link> link,
                                            std::chrono::seconds timeout) override;
  std::uint64_t new_sample_group_key() override { return next_request_id().value; }
  void end_all(engine_failure why) override;
  engine_model_card model_card() const override;

 private:
  boost::asio::any_io_executor executor_ex_;
  engine_config config_;
  std::shared_ptr<const model> model_;
  std::shared_ptr<const model> draft_;  // null without a draft model
  std::shared_ptr<const tokenizer> tokenizer_;
  std::vector<token_id> stop_ids_;
  std::shared_ptr<const chat_setup> chat_;
  sampling_params request_defaults_;
  std::size_t max_prompt_bytes_ = 0;
  serving_metrics metrics_;
  status_board status_;         // /health's figures, published by the scheduler and the allocator
  actor_thread engine_thread_;  // declared before the actors: it outlives their strands
  kv_allocator_actor kv_;
  scheduler_actor scheduler_;
  executor_actor executor_;
  std::atomic<std::uint64_t> next_id_{0};
  actor_thread prompt_thread_;
};

}  // namespace pagedserve
