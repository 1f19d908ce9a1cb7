#pragma once
// Ownership of KV blocks: reference counts, each sequence's block table, and the prefix cache.
// Pure bookkeeping (no Asio, no floats): the KV-allocator actor owns one, and schedule_step is its
// only caller in serving.
//
// Prefix cache: once a full block's K/V are computed its hash (the block's tokens chained with its
// parent block's hash and the request's salt) maps to it, and a later prompt with the same prefix
// reuses it instead of recomputing. Blocks whose refcount drops to 0 join the free queue at its tail
// but keep their hash until they are taken from its head for new data (LRU eviction); a hit on a
// free cached block takes it back out of the queue.
//
// Parallel sampling: fork() gives a new sequence the blocks holding another's prompt, every one shared
// by reference count. A write into a shared block copies it first (copy on write): ensure_capacity
// hands back the block copies the executor must make before the step's forward pass.
//
// Speculative decoding's draft model keeps its K/V in the same blocks, but only while a sequence
// mirrors the target's rows (schedule_step.hpp): a cached block carries a "draft K/V present" mark
// when the sequence that committed it mirrored every row of it, so a later prompt that reuses it
// knows whether the draft may read it. The mark goes when the block is taken for new data.
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {

class block_manager {
 public:
  // prefix_caching false: match_prefix never matches and no block enters the cache.
  block_manager(int n_blocks, int block_size, bool prefix_caching = true);

  // Starts a sequence's table with the cached blocks that hold a prefix of `tokens` (never the last
  // token: its logits must be computed). Returns how many tokens those blocks hold.
  int match_prefix(request_id seq, std::span<const token_id> tokens, std::uint64_t salt);
  // `child` (new) shares the blocks that hold parent's first n_tokens tokens. It will write from
  // position first_write on, so only the blocks wholly before it count as committed to the cache.
  void fork(request_id parent, request_id child, int n_tokens, int first_write);
  // Grows the sequence's table to hold n_tokens tokens, and gives it a private copy of every shared
  // block it will write (positions first_write..n_tokens-1), appending {source, copy} to `copies`.
  // All or nothing: on false nothing changed.
  struct block_copy {
    block_id from, to;
  };
  bool ensure_capacity(request_id seq, int n_tokens, int first_write, std::vector<block_copy>& copies);
  // Growth only, for a sequence that never shares blocks it writes.
  bool ensure_capacity(request_id seq, int n_tokens);
  // Records that full blocks first_block... of the sequence hold computed K/V: `tokens` are their
  // tokens (a multiple of block_size), continuing the blocks already recorded. Other prompts may reuse them.
  // draft_kv: the draft model's K/V of these blocks were written too (the blocks it caches get the mark).
  void commit_full_blocks(request_id seq, int first_block, std::span<const token_id> tokens, bool draft_kv = false);
  // Speculative decoding's rollback: the sequence keeps only the blocks that hold its first n_tokens
  // tokens; the blocks past them (grown for proposals that were rejected) go back to the pool. Never
  // cuts into committed blocks: rejected tokens are never committed.
  void truncate(request_id seq, int n_tokens);
  // Drops the sequence's references; unknown ids are ignored. A reference the table holds but the
  // block's count has already lost (a bookkeeping bug) is skipped, not dropped twice, and described
  // in the result so the caller can report it; every other block is freed as usual.
  std::optional<std::string> free_sequence(request_id seq);

  const std::vector<block_id>& table(request_id seq) const;
  bool has_sequence(request_id seq) const { return seqs_.contains(seq); }
  int blocks_needed(int n_tokens) const { return (n_tokens + block_size_ - 1) / block_size_; }
  // Tokens match_prefix found cached when the sequence's table was started.
  int n_matched_tokens(request_id seq) const;
  // Full blocks of the sequence already recorded in the prefix cache chain.
  int n_committed_blocks(request_id seq) const;
  // Whether each of the sequence's first n_blocks blocks carries the draft model's K/V mark.
  bool draft_kv_present(request_id seq, int n_blocks) const;

  int n_blocks_total() const { return static_cast<int>(refcount_.size()); }
  int n_blocks_free() const { return n_free_; }
  int n_blocks_cached() const { return static_cast<int>(cached_.size()); }
  int n_sequences() const { return static_cast<int>(seqs_.size()); }
  int block_size() const { return block_size_; }
  int refcount(block_id b) const { return refcount_.at(b.value); }
  std::uint64_t prefix_queries() const { return prefix_queries_; }  // prompt tokens looked up
  std::uint64_t prefix_hits() const { return prefix_hits_; }        // of which found cached
  std::uint64_t n_forks() const { return n_forks_; }
  std::uint64_t n_block_copies() const { return n_block_copies_; }  // copy-on-write copies made

  // Every block is free (refcount 0, in the free queue once) or referenced exactly refcount times by
  // tables; every cache entry names a block carrying that hash; only cached blocks carry the draft
  // K/V mark. The first violation, or nothing.
  // O(blocks + table entries): a test and debug-build facility, never on a release build's hot path.
  std::optional<std::string> find_invariant_violation() const;

 private:
  struct sequence_blocks {
    std::vector<block_id> table;
    int n_committed = 0;           // leading blocks recorded in the hash chain
    std::uint64_t salt_hash = 0;   // the chain's start
    std::vector<std::uint64_t> chain;  // [n_committed] hash of each committed block
    std::uint64_t last_hash() const { return chain.empty() ? salt_hash : chain.back(); }
    int n_matched_tokens = 0;      // tokens match_prefix found cached when the sequence started
  };
  std::uint64_t block_hash(std::uint64_t parent, std::span<const token_id> tokens) const;
  block_id take_free_block();  // from the queue's head, evicting its cache entry
  void free_queue_remove(int b);
  void free_queue_push_back(int b);

  int block_size_;
  bool prefix_caching_;
  std::vector<std::int32_t> refcount_;  // [n_blocks]
  // The free queue: a doubly linked list over block ids (-1 = none), LRU first.
  std::vector<std::int32_t> free_prev_, free_next_;
  std::vector<bool> in_free_;
  int free_head_ = -1, free_tail_ = -1, n_free_ = 0;
  // Prefix cache: hash -> block, and what each cached block holds (to verify, so collisions never alias).
  std::unordered_map<std::uint64_t, block_id> cached_;
  std::vector<std::optional<std::uint64_t>> hash_of_;   // [n_blocks]
  std::vector<std::uint64_t> parent_of_;                // [n_blocks] parent hash of a cached block
  std::vector<token_id> tokens_of_;                     // [n_blocks * block_size] tokens of a cached block
  std::vector<bool> draft_kv_;                          // [n_blocks] a cached block holds the draft's K/V too
  std::unordered_map<request_id, sequence_blocks> seqs_;
  std::uint64_t prefix_queries_ = 0, prefix_hits_ = 0;
  std::uint64_t n_forks_ = 0, n_block_copies_ = 0;
};

}  // namespace pagedserve
