#include "pagedserve/block_manager.hpp"

#include "pagedserve/check.hpp"

namespace pagedserve {

block_manager::block_manager(int n_blocks, int block_size) : block_size_(block_size), refcount_(n_blocks, 0) {
  ps_check(n_blocks > 0 && block_size > 0, "block_manager: pool must have blocks of positive size");
  for (int b = 0; b < n_blocks; ++b) free_.push_back(block_id{b});
}

bool block_manager::ensure_capacity(request_id seq, int n_tokens) {
  std::vector<block_id>& table = tables_[seq];
  const int need = blocks_needed(n_tokens) - static_cast<int>(table.size());
  if (need <= 0) return true;
  if (need > n_blocks_free()) {
    if (table.empty()) tables_.erase(seq);
    return false;
  }
  for (int i = 0; i < need; ++i) {
    const block_id b = free_.front();
    free_.pop_front();
    ps_check(refcount_[b.value] == 0, "block_manager: allocated a block that is still referenced");
    refcount_[b.value] = 1;
    table.push_back(b);
  }
  return true;
}

void block_manager::free_sequence(request_id seq) {
  auto it = tables_.find(seq);
  if (it == tables_.end()) return;
  for (block_id b : it->second) {
    ps_check(refcount_[b.value] > 0, "block_manager: double free of a block");
    if (--refcount_[b.value] == 0) free_.push_back(b);
  }
  tables_.erase(it);
}

const std::vector<block_id>& block_manager::table(request_id seq) const {
  static const std::vector<block_id> empty;
  auto it = tables_.find(seq);
  return it == tables_.end() ? empty : it->second;
}

std::optional<std::string> block_manager::find_invariant_violation() const {
  std::vector<std::int32_t> counted(refcount_.size(), 0);
  for (const auto& [seq, table] : tables_)
    for (block_id b : table) {
      if (b.value < 0 || b.value >= n_blocks_total())
        return "sequence " + std::to_string(seq.value) + " holds out-of-range block " + std::to_string(b.value);
      ++counted[b.value];
    }
  std::vector<bool> is_free(refcount_.size(), false);
  for (block_id b : free_) {
    if (is_free[b.value]) return "block " + std::to_string(b.value) + " is on the free list twice";
    is_free[b.value] = true;
  }
  for (std::size_t b = 0; b < refcount_.size(); ++b) {
    if (counted[b] != refcount_[b])
      return "block " + std::to_string(b) + " has refcount " + std::to_string(refcount_[b]) + " but " +
             std::to_string(counted[b]) + " table references";
    if (is_free[b] != (refcount_[b] == 0))
      return "block " + std::to_string(b) + (is_free[b] ? " is free but referenced" : " is unreferenced but not free");
  }
  return std::nullopt;
}

}  // namespace pagedserve
