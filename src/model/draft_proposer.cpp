#include "model/draft_proposer.hpp"

#include <algorithm>
#include <cmath>

#include "pagedserve/check.hpp"
#include "pagedserve/sampling.hpp"

namespace pagedserve {
namespace {

// Copies row r of `from` (its token, position, slot) into `to` as a row of a sequence whose block table
// is `from`'s sequence's; adds the table unless `to`'s last row came from the same sequence (last_seq:
// the `from` sequence of `to`'s last table, -1 at first).
void copy_row(step_batch& to, const step_batch& from, int r, token_id token, std::int32_t& last_seq) {
  const std::int32_t seq = from.seq_of_token[r];
  if (seq != last_seq) {
    const std::size_t table_begin = from.seq_block_offset[seq];
    const std::size_t table_end = seq + 1 < static_cast<std::int32_t>(from.seq_block_offset.size())
                                      ? static_cast<std::size_t>(from.seq_block_offset[seq + 1])
                                      : from.block_tables.size();
    to.seq_block_offset.push_back(static_cast<std::int32_t>(to.block_tables.size()));
    to.block_tables.insert(to.block_tables.end(), from.block_tables.begin() + table_begin,
                           from.block_tables.begin() + table_end);
    last_seq = seq;
  }
  to.tokens.push_back(token);
  to.positions.push_back(from.positions[r]);
  to.seq_of_token.push_back(static_cast<std::int32_t>(to.seq_block_offset.size()) - 1);
  to.slots.push_back(from.slots[r]);
}

}  // namespace

draft_proposer::draft_proposer(std::shared_ptr<const model> draft, const kernels::kernel_table& kt, int n_blocks,
                               int block_size, dtype kv_type, int max_tokens_per_step, std::uint64_t seed)
    : model_(std::move(draft)),
      cache_(model_->config.n_layers, n_blocks, block_size, model_->config.n_kv_heads, model_->config.head_size(),
             kv_type),
      forward_(*model_, kt, max_tokens_per_step),
      rng_(seed) {}

token_id draft_proposer::draw(const float* logits, float temperature, std::vector<float>* q) {
  const int vocab = model_->config.vocab_size;
  if (temperature <= 0) return argmax(logits, vocab);
  q->resize(vocab);
  const float top = *std::max_element(logits, logits + vocab);
  double sum = 0;
  for (int i = 0; i < vocab; ++i) sum += (*q)[i] = std::exp((logits[i] - top) / temperature);
  for (float& p : *q) p = static_cast<float>(p / sum);
  return static_cast<token_id>(std::discrete_distribution<int>(q->begin(), q->end())(rng_));
}

draft_proposals draft_proposer::propose(step_batch& batch, std::span<const draft_request> requests,
                                        std::span<const char> mirrors) {
  const int vocab = model_->config.vocab_size;
  draft_proposals out;
  out.tokens.resize(requests.size());
  out.q.resize(requests.size());
  // Forward 1: every row of the mirrored sequences but the proposals' (their tokens are not known
  // yet), scoring each last token. Every proposing sequence is mirrored.
  ps_check(mirrors.size() == batch.seq_block_offset.size(), "draft: a mirror flag per batch sequence");
  std::vector<char> is_proposal(batch.tokens.size(), 0);
  for (const draft_request& r : requests) {
    ps_check(r.n_proposals == 0 || mirrors[batch.seq_of_token[r.last_row]], "draft: proposals for a lapsed sequence");
    std::fill_n(is_proposal.begin() + r.last_row + 1, r.n_proposals, 1);
  }
  step_batch first;
  std::vector<int> first_row_of_last(batch.tokens.size(), -1);
  std::int32_t last_seq = -1;
  for (int row = 0; row < batch.n_tokens(); ++row) {
    if (is_proposal[row] || !mirrors[batch.seq_of_token[row]]) continue;
    first_row_of_last[row] = first.n_tokens();
    copy_row(first, batch, row, batch.tokens[row], last_seq);
  }
  for (const draft_request& r : requests)
    if (r.n_proposals > 0) first.logits_rows.push_back(first_row_of_last[r.last_row]);
  const float* logits = forward_.run(first, cache_);
  std::vector<std::size_t> active;  // requests still proposing, in logits order
  for (std::size_t i = 0, row = 0; i < requests.size(); ++i) {
    if (requests[i].n_proposals == 0) continue;
    out.q[i].emplace_back();
    out.tokens[i].push_back(draw(logits + row++ * vocab, requests[i].temperature, &out.q[i].back()));
    active.push_back(i);
  }
  // Forwards 2..k+1: one row per speculating sequence, its latest proposal at the next position.
  for (int j = 1; !active.empty(); ++j) {
    step_batch next;
    std::int32_t next_last_seq = -1;
    std::vector<std::size_t> scoring;
    for (std::size_t i : active) {
      const int row = requests[i].last_row + j;
      copy_row(next, batch, row, out.tokens[i][j - 1], next_last_seq);
      batch.tokens[row] = out.tokens[i][j - 1];
      if (j < requests[i].n_proposals) {
        next.logits_rows.push_back(next.n_tokens() - 1);
        scoring.push_back(i);
      }
    }
    logits = forward_.run(next, cache_);
    for (std::size_t k = 0; k < scoring.size(); ++k) {
      const std::size_t i = scoring[k];
      out.q[i].emplace_back();
      out.tokens[i].push_back(draw(logits + k * vocab, requests[i].temperature, &out.q[i].back()));
    }
    active = std::move(scoring);
  }
  return out;
}

}  // namespace pagedserve
