#include "kv/block_manager.hpp"

#include <algorithm>

#include "pagedserve/check.hpp"

namespace pagedserve {
namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64 finaliser
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

block_manager::block_manager(int n_blocks, int block_size, bool prefix_caching)
    : block_size_(block_size),
      prefix_caching_(prefix_caching),
      refcount_(n_blocks, 0),
      free_prev_(n_blocks, -1),
      free_next_(n_blocks, -1),
      in_free_(n_blocks, false),
      hash_of_(n_blocks),
      parent_of_(n_blocks, 0),
      tokens_of_(static_cast<std::size_t>(n_blocks) * block_size, 0),
      draft_kv_(n_blocks, false) {
  ps_check(n_blocks > 0 && block_size > 0, "block_manager: pool must have blocks of positive size");
  for (int b = 0; b < n_blocks; ++b) free_queue_push_back(b);
}

std::uint64_t block_manager::block_hash(std::uint64_t parent, std::span<const token_id> tokens) const {
  std::uint64_t h = mix(parent);
  for (token_id t : tokens) h = mix(h ^ static_cast<std::uint32_t>(t));
  return h;
}

void block_manager::free_queue_remove(int b) {
  ps_check(in_free_[b], "block_manager: removing a block that is not free");
  const int p = free_prev_[b], n = free_next_[b];
  (p >= 0 ? free_next_[p] : free_head_) = n;
  (n >= 0 ? free_prev_[n] : free_tail_) = p;
  free_prev_[b] = free_next_[b] = -1;
  in_free_[b] = false;
  --n_free_;
}

void block_manager::free_queue_push_back(int b) {
  ps_check(!in_free_[b], "block_manager: block freed twice");
  free_prev_[b] = free_tail_;
  free_next_[b] = -1;
  (free_tail_ >= 0 ? free_next_[free_tail_] : free_head_) = b;
  free_tail_ = b;
  in_free_[b] = true;
  ++n_free_;
}

block_id block_manager::take_free_block() {
  const int b = free_head_;
  free_queue_remove(b);
  if (hash_of_[b]) {  // evict: the block gets new data
    auto it = cached_.find(*hash_of_[b]);
    if (it != cached_.end() && it->second.value == b) cached_.erase(it);
    hash_of_[b].reset();
  }
  draft_kv_[b] = false;
  ps_check(refcount_[b] == 0, "block_manager: allocated a block that is still referenced");
  refcount_[b] = 1;
  return block_id{b};
}

int block_manager::match_prefix(request_id seq, std::span<const token_id> tokens, std::uint64_t salt) {
  ps_check(!seqs_.contains(seq), "match_prefix: sequence already has blocks");
  sequence_blocks& s = seqs_[seq];
  s.salt_hash = mix(salt);
  if (!prefix_caching_) return 0;
  prefix_queries_ += tokens.size();
  // Only blocks wholly before the last token: its logits must be computed.
  const int max_blocks = tokens.empty() ? 0 : static_cast<int>(tokens.size() - 1) / block_size_;
  for (int i = 0; i < max_blocks; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
    const std::uint64_t h = block_hash(s.last_hash(), block_tokens);
    auto it = cached_.find(h);
    if (it == cached_.end()) break;
    const int b = it->second.value;
    const bool same = parent_of_[b] == s.last_hash() &&
                      std::equal(block_tokens.begin(), block_tokens.end(), tokens_of_.begin() + static_cast<std::ptrdiff_t>(b) * block_size_);
    if (!same) break;  // a hash collision: treat as a miss
    if (refcount_[b] == 0) free_queue_remove(b);
    ++refcount_[b];
    s.table.push_back(block_id{b});
    s.chain.push_back(h);
    ++s.n_committed;
  }
  s.n_matched_tokens = s.n_committed * block_size_;
  prefix_hits_ += s.n_matched_tokens;
  return s.n_matched_tokens;
}

void block_manager::fork(request_id parent, request_id child, int n_tokens, int first_write) {
  ps_check(!seqs_.contains(child), "fork: the child already has blocks");
  const sequence_blocks& p = seqs_.at(parent);
  const int n_shared = blocks_needed(n_tokens);
  ps_check(n_shared <= static_cast<int>(p.table.size()) && first_write <= n_tokens,
           "fork: the parent does not hold the tokens shared");
  sequence_blocks c;
  c.table.assign(p.table.begin(), p.table.begin() + n_shared);
  for (block_id b : c.table) ++refcount_[b.value];
  c.n_committed = std::min(p.n_committed, first_write / block_size_);
  c.salt_hash = p.salt_hash;
  c.chain.assign(p.chain.begin(), p.chain.begin() + c.n_committed);
  c.n_matched_tokens = first_write;
  seqs_.emplace(child, std::move(c));
  ++n_forks_;
}

bool block_manager::ensure_capacity(request_id seq, int n_tokens) {
  std::vector<block_copy> copies;
  const int written_from = has_sequence(seq) ? static_cast<int>(table(seq).size()) * block_size_ : 0;
  const bool ok = ensure_capacity(seq, n_tokens, std::min(written_from, n_tokens), copies);
  ps_check(copies.empty(), "ensure_capacity: growth alone never copies");
  return ok;
}

bool block_manager::ensure_capacity(request_id seq, int n_tokens, int first_write, std::vector<block_copy>& copies) {
  auto [it, inserted] = seqs_.try_emplace(seq);
  std::vector<block_id>& table = it->second.table;
  const int n_have = static_cast<int>(table.size());
  const int grow = std::max(0, blocks_needed(n_tokens) - n_have);
  // Shared blocks the step writes into: each needs a private copy first.
  std::vector<int> shared;
  for (int i = first_write / block_size_; i < std::min(n_have, blocks_needed(n_tokens)); ++i)
    if (refcount_[table[i].value] > 1) shared.push_back(i);
  if (grow + static_cast<int>(shared.size()) > n_free_) {
    if (inserted) seqs_.erase(it);
    return false;
  }
  for (int i : shared) {
    const block_id from = table[i], to = take_free_block();
    --refcount_[from.value];  // still > 0: the other holders keep it
    table[i] = to;
    copies.push_back({from, to});
    ++n_block_copies_;
  }
  for (int i = 0; i < grow; ++i) table.push_back(take_free_block());
  return true;
}

void block_manager::commit_full_blocks(request_id seq, int first_block, std::span<const token_id> tokens,
                                       bool draft_kv) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  sequence_blocks& s = it->second;
  ps_check(first_block == s.n_committed, "commit_full_blocks: blocks must be committed in order");
  ps_check(tokens.size() % block_size_ == 0, "commit_full_blocks: tokens must fill whole blocks");
  const int n_new = static_cast<int>(tokens.size()) / block_size_;
  ps_check(s.n_committed + n_new <= static_cast<int>(s.table.size()), "commit_full_blocks: beyond the table");
  for (int i = 0; i < n_new; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<std::size_t>(i) * block_size_, block_size_);
    const std::uint64_t h = block_hash(s.last_hash(), block_tokens);
    const int b = s.table[s.n_committed].value;
    // The first block computed for a prefix stays its cache entry; a twin computed meanwhile is not cached.
    if (prefix_caching_ && !hash_of_[b] && !cached_.contains(h)) {
      cached_.emplace(h, block_id{b});
      hash_of_[b] = h;
      draft_kv_[b] = draft_kv;
      parent_of_[b] = s.last_hash();
      std::copy(block_tokens.begin(), block_tokens.end(), tokens_of_.begin() + static_cast<std::ptrdiff_t>(b) * block_size_);
    }
    s.chain.push_back(h);
    ++s.n_committed;
  }
}

void block_manager::truncate(request_id seq, int n_tokens) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  sequence_blocks& s = it->second;
  const int keep = blocks_needed(n_tokens);
  ps_check(keep >= s.n_committed, "truncate: would drop committed blocks");
  while (static_cast<int>(s.table.size()) > keep) {
    const int b = s.table.back().value;
    s.table.pop_back();
    ps_check(refcount_[b] > 0, "truncate: a table block with no reference");
    if (--refcount_[b] == 0) free_queue_push_back(b);
  }
}

std::optional<std::string> block_manager::free_sequence(request_id seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return std::nullopt;
  std::optional<std::string> violation;
  // Last blocks first: under LRU they are the least likely to be shared by another prompt.
  for (auto b = it->second.table.rbegin(); b != it->second.table.rend(); ++b) {
    if (refcount_[b->value] <= 0) [[unlikely]] {
      // The table names a block it no longer holds. Dropping it again would queue it twice; leaving
      // it alone keeps the pool sound for every other sequence, and the caller reports the bug.
      violation = "sequence " + std::to_string(seq.value) + " freed block " + std::to_string(b->value) +
                  " whose refcount is already " + std::to_string(refcount_[b->value]);
      continue;
    }
    if (--refcount_[b->value] == 0) free_queue_push_back(b->value);
  }
  seqs_.erase(it);
  return violation;
}

const std::vector<block_id>& block_manager::table(request_id seq) const {
  static const std::vector<block_id> empty;
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? empty : it->second.table;
}

int block_manager::n_matched_tokens(request_id seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.n_matched_tokens;
}

int block_manager::n_committed_blocks(request_id seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.n_committed;
}

bool block_manager::draft_kv_present(request_id seq, int n_blocks) const {
  const std::vector<block_id>& t = table(seq);
  ps_check(n_blocks <= static_cast<int>(t.size()), "draft_kv_present: beyond the table");
  return std::all_of(t.begin(), t.begin() + n_blocks, [&](block_id b) { return draft_kv_[b.value]; });
}

std::optional<std::string> block_manager::find_invariant_violation() const {
  std::vector<std::int32_t> counted(refcount_.size(), 0);
  for (const auto& [seq, s] : seqs_)
    for (block_id b : s.table) {
      if (b.value < 0 || b.value >= n_blocks_total())
        return "sequence " + std::to_string(seq.value) + " holds out-of-range block " + std::to_string(b.value);
      ++counted[b.value];
    }
  int n_listed = 0;
  for (int b = free_head_; b >= 0; b = free_next_[b]) {
    if (!in_free_[b]) return "block " + std::to_string(b) + " is listed free but not marked free";
    if (++n_listed > n_blocks_total()) return "the free queue has a cycle";
  }
  if (n_listed != n_free_) return "free queue holds " + std::to_string(n_listed) + " blocks, count says " + std::to_string(n_free_);
  for (std::size_t b = 0; b < refcount_.size(); ++b) {
    if (counted[b] != refcount_[b])
      return "block " + std::to_string(b) + " has refcount " + std::to_string(refcount_[b]) + " but " +
             std::to_string(counted[b]) + " table references";
    if (in_free_[b] != (refcount_[b] == 0))
      return "block " + std::to_string(b) + (in_free_[b] ? " is free but referenced" : " is unreferenced but not free");
    if (draft_kv_[b] && !hash_of_[b]) return "block " + std::to_string(b) + " has the draft K/V mark but no cache entry";
  }
  for (const auto& [h, b] : cached_)
    if (hash_of_[b.value] != h) return "cache entry names block " + std::to_string(b.value) + " which lost its hash";
  return std::nullopt;
}

}  // namespace pagedserve
