#include "actors/engine.hpp"

#include <algorithm>

#include "actors/request_actor.hpp"
#include "grammar/token_vocabulary.hpp"
#include "pagedserve/check.hpp"
#include "kv/kv_cache.hpp"

namespace pagedserve {

namespace {

std::vector<token_id> stop_ids_for(const model& m, const tokenizer& tok, const chat_setup* chat) {
  std::vector<token_id> ids(m.generation.eos_token_ids.begin(), m.generation.eos_token_ids.end());
  ids.push_back(tok.eos_id());
  if (chat && chat->eos_token)
    if (auto id = tok.token_to_id(*chat->eos_token)) ids.push_back(*id);
  std::erase_if(ids, [](token_id t) { return t < 0; });
  std::sort(ids.begin(), ids.end());
  ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
  return ids;
}

// The most text one token stands for: its decoded bytes, the longest over the vocabulary.
std::size_t longest_token_bytes(const tokenizer& tok) {
  std::size_t longest = 1;
  for (token_id id = 0; id < tok.vocab_size(); ++id) longest = std::max(longest, tok.decode_piece(-1, id).size());
  return longest;
}

// What a request that sets no sampling field gets: the model's generation_config.json under
// engine.generation_config "auto" (vLLM's default), else sampling_params' own defaults.
sampling_params request_defaults_for(const model& m, const engine_config& config) {
  sampling_params p;
  if (config.generation_config != "auto") return p;
  const generation_defaults& g = m.generation;
  if (g.temperature) p.temperature = *g.temperature;
  if (g.top_p) p.top_p = *g.top_p;
  if (g.top_k) p.top_k = std::max(0, *g.top_k);  // transformers' top_k 0 and vLLM's -1 both mean all
  if (g.min_p) p.min_p = *g.min_p;
  if (g.repetition_penalty) p.repetition_penalty = *g.repetition_penalty;
  return p;
}

// Attention FLOPs per attended position relative to one token's matmul FLOPs: a query head does a
// dot product and an axpy of head_size per position (4 FLOPs per element, all heads, all layers),
// a token 2 FLOPs per weight of every layer's projections and FFN (the experts it uses, for MoE).
double attention_cost_of(const model_config& c) {
  const double attention = 4.0 * c.q_dim() * c.n_layers;
  const double ffn = c.n_experts > 0 ? 3.0 * c.dim * c.expert_hidden_dim * c.n_experts_used + 1.0 * c.dim * c.n_experts
                                     : 3.0 * c.dim * c.hidden_dim;
  const double weights = (2.0 * c.dim * c.q_dim() + 2.0 * c.dim * c.kv_dim() + ffn) * c.n_layers;
  return weights > 0 ? attention / (2.0 * weights) : 0.0;
}

speculation_limits speculation_limits_of(const speculative_config& c, const model& target, const model* draft) {
  speculation_limits l;
  if (c.method != "ngram" && c.method != "draft_model") return l;  // off
  l.draft_model = c.method == "draft_model";
  if (draft) l.draft_cost = static_cast<double>(model_weight_bytes(*draft)) / std::max<std::uint64_t>(1, model_weight_bytes(target));
  l.num_speculative_tokens = c.num_speculative_tokens;
  l.lookup_max = c.prompt_lookup_max;
  l.lookup_min = c.prompt_lookup_min;
  l.fixed_knee_rows = c.max_batch_rows;
  return l;
}

// Positions one sequence may use: the model's context, cut to engine.max_model_len when set and to a
// draft model's (it runs at the same positions), and never more than the whole KV pool (alone, a
// sequence always fits).
int context_len_of(const model_config& mc, const engine_config& c, const model* draft) {
  ps_check(c.kv_blocks > 0, "engine_config.kv_blocks is 0: size the KV pool first (src/kv_pool_plan.hpp)");
  int len = c.max_model_len > 0 ? std::min(mc.seq_len, c.max_model_len) : mc.seq_len;
  if (draft) len = std::min(len, draft->config.seq_len);
  return std::min(len, c.kv_blocks * c.block_size);
}

}  // namespace

engine::engine(const boost::asio::any_io_executor& ex, std::shared_ptr<const model> m,
               std::shared_ptr<const tokenizer> tok, const engine_config& config, std::shared_ptr<const chat_setup> chat,
               std::shared_ptr<const model> draft)
    : executor_ex_(ex),
      config_(config),
      model_(std::move(m)),
      draft_(draft),
      tokenizer_(std::move(tok)),
      stop_ids_(stop_ids_for(*model_, *tokenizer_, chat.get())),
      chat_(std::move(chat)),
      request_defaults_(request_defaults_for(*model_, config)),
      metrics_(model_->config.seq_len),
      kv_(engine_thread_.executor(), config.kv_blocks, config.block_size, config.prefix_caching),
      scheduler_(engine_thread_.executor(), ex,
                 scheduler_limits{.max_num_seqs = config.max_num_seqs,
                                  .max_num_batched_tokens = config.max_num_batched_tokens,
                                  // a sequence never outgrows the pool: alone, it always fits
                                  .context_len = context_len_of(model_->config, config, draft.get()),
                                  .max_waiting = config.max_waiting,
                                  .max_decode_slowdown = config.max_decode_slowdown,
                                  .min_prefill_chunk = 16,
                                  .attention_cost = attention_cost_of(model_->config),
                                  .max_waiting_per_client = config.max_waiting_per_client,
                                  .speculation = speculation_limits_of(config.speculative, *model_, draft.get())},
                 config.seed >= 0 ? std::optional<std::uint64_t>(config.seed) : std::nullopt),
      executor_(engine_thread_.executor(), model_, executor_options{config.kv_blocks, config.block_size, config.max_num_batched_tokens,
                                         config.threads, kernels::kernel_table_select(config.kernels),
                                         kv_cache_type(config.kv_cache_dtype),
                                         std::make_shared<const grammar::token_vocabulary>(
                                             grammar::token_vocabulary_from(*tokenizer_, stop_ids_)),
                                         draft}) {
  max_prompt_bytes_ = 4 * longest_token_bytes(*tokenizer_) * static_cast<std::size_t>(max_sequence_tokens());
  kv_.connect(scheduler_);
  kv_.publish_to(status_);
  scheduler_.publish_to(status_);
  scheduler_.connect(kv_, executor_, &metrics_);
  executor_.connect(scheduler_);
}

engine::~engine() {
  prompt_thread_.stop();
  engine_thread_.stop();
}

int engine::default_max_tokens(int n_prompt) const {
  const int left = max_sequence_tokens() - n_prompt;
  const auto& cap = model_->generation.max_new_tokens;
  return config_.generation_config == "auto" && cap ? std::min(left, *cap) : left;
}

int engine::max_sequence_tokens() const { return context_len_of(model_->config, config_, draft_.get()); }

void engine::report_status(std::function<void(engine_status)> done) {
  // From the board, at once: the engine thread may be in the middle of a long step.
  const auto [queues, pool] = status_.read();
  done({queues, pool, {executor_.busy_seconds(), executor_.gap_seconds()}});
}

std::shared_ptr<generation_handle> engine::submit(generate_command command, std::shared_ptr<client_link> link,
                                                  std::chrono::seconds timeout) {
  auto actor = std::make_shared<request_actor>(executor_ex_, *this, std::move(link), std::move(command), timeout);
  actor->tell(start_generation{});
  return actor;
}

void engine::end_all(engine_failure why) { scheduler_.tell(finish_all{std::move(why)}); }

engine_model_card engine::model_card() const { return {model_->name, max_sequence_tokens()}; }

}  // namespace pagedserve
