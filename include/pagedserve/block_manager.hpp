#pragma once
// Ownership of KV blocks: the free list, reference counts and each sequence's block table.
// Pure bookkeeping (no Asio, no floats): the KV-allocator actor owns one and is its only caller.
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {

class block_manager {
 public:
  block_manager(int n_blocks, int block_size);

  // Grows the sequence's table to hold n_tokens tokens. All or nothing: on false nothing changed.
  bool ensure_capacity(request_id seq, int n_tokens);
  // Returns every block of the sequence (drops its references); unknown ids are ignored.
  void free_sequence(request_id seq);

  const std::vector<block_id>& table(request_id seq) const;
  bool has_sequence(request_id seq) const { return tables_.contains(seq); }
  int blocks_needed(int n_tokens) const { return (n_tokens + block_size_ - 1) / block_size_; }

  int n_blocks_total() const { return static_cast<int>(refcount_.size()); }
  int n_blocks_free() const { return static_cast<int>(free_.size()); }
  int n_sequences() const { return static_cast<int>(tables_.size()); }
  int block_size() const { return block_size_; }
  int refcount(block_id b) const { return refcount_.at(b.value); }

  // Every block is either free with refcount 0 or referenced exactly refcount times by tables.
  // Returns a description of the first violation, or nothing when the state is consistent.
  std::optional<std::string> find_invariant_violation() const;

 private:
  int block_size_;
  std::vector<std::int32_t> refcount_;  // [n_blocks]
  std::deque<block_id> free_;           // FIFO: a freed block is reused last
  std::unordered_map<request_id, std::vector<block_id>> tables_;
};

}  // namespace pagedserve
