#pragma once
// The input of one forward pass: a flat, variable-length batch of chunks of many sequences, each token
// with the KV-cache slot it writes. The scheduling step and the single-sequence generator both build
// it through add_chunk, so the slot mapping lives in one place.
#include <cstdint>
#include <span>
#include <vector>

#include "pagedserve/ids.hpp"

namespace pagedserve {

struct step_batch {
  std::vector<token_id> tokens;               // [n_tokens] input ids
  std::vector<std::int32_t> positions;        // [n_tokens] position of each token in its sequence
  std::vector<std::int32_t> seq_of_token;     // [n_tokens] index into the sequences below
  std::vector<std::int32_t> slots;            // [n_tokens] KV slot = block * block_size + offset
  std::vector<std::int32_t> block_tables;     // every sequence's block ids, concatenated
  std::vector<std::int32_t> seq_block_offset; // [n_seqs] where each sequence's table starts
  std::vector<std::int32_t> logits_rows;      // tokens whose next-token logits are wanted, in order

  int n_tokens() const { return static_cast<int>(tokens.size()); }

  // Appends a sequence's chunk tokens[first, first + n_tokens) at positions first.., its K/V slots
  // read from `table` (the sequence's blocks of block_size tokens, covering the chunk); with
  // `samples`, the chunk's last row is a logits row.
  void add_chunk(std::span<const token_id> tokens, int first, int n_tokens, std::span<const block_id> table,
                 int block_size, bool samples);
  // Speculative verification: appends chunk_tokens (the sequence's last token, then the proposals) at
  // positions first.., every row a logits row, so the step scores each proposal and the one after.
  void add_verify_chunk(std::span<const token_id> chunk_tokens, int first, std::span<const block_id> table,
                        int block_size);

 private:
  void add_rows(std::span<const token_id> chunk_tokens, int first, std::span<const block_id> table, int block_size);
};

}  // namespace pagedserve
