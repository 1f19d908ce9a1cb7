#include "pagedserve/step_batch.hpp"

#include "pagedserve/check.hpp"

namespace pagedserve {

void step_batch::add_chunk(std::span<const token_id> seq_tokens, int first, int n, std::span<const block_id> table,
                           int block_size, bool samples) {
  ps_check(first >= 0 && n > 0 && first + n <= static_cast<int>(seq_tokens.size()) &&
               (first + n + block_size - 1) / block_size <= static_cast<int>(table.size()),
           "step_batch: a chunk outside its tokens or its block table");
  add_rows(seq_tokens.subspan(first, n), first, table, block_size);
  if (samples) logits_rows.push_back(static_cast<std::int32_t>(tokens.size() - 1));
}

void step_batch::add_verify_chunk(std::span<const token_id> chunk_tokens, int first, std::span<const block_id> table,
                                  int block_size) {
  const int n = static_cast<int>(chunk_tokens.size());
  ps_check(first >= 0 && n > 0 && (first + n + block_size - 1) / block_size <= static_cast<int>(table.size()),
           "step_batch: a verification chunk outside its block table");
  add_rows(chunk_tokens, first, table, block_size);
  for (int i = 0; i < n; ++i) logits_rows.push_back(static_cast<std::int32_t>(tokens.size()) - n + i);
}

void step_batch::add_rows(std::span<const token_id> chunk_tokens, int first, std::span<const block_id> table,
                          int block_size) {
  const auto seq = static_cast<std::int32_t>(seq_block_offset.size());
  seq_block_offset.push_back(static_cast<std::int32_t>(block_tables.size()));
  for (block_id b : table) block_tables.push_back(b.value);
  for (int i = 0; i < static_cast<int>(chunk_tokens.size()); ++i) {
    const int p = first + i;
    tokens.push_back(chunk_tokens[i]);
    positions.push_back(p);
    seq_of_token.push_back(seq);
    slots.push_back(table[p / block_size].value * block_size + p % block_size);
  }
}

}  // namespace pagedserve
