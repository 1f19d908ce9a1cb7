#pragma once
// Builds a GGUF (version 3) file: metadata key/values, then tensors converted from fp32 to F32, F16,
// BF16 or any of ggml's block formats (ggml_blocks.hpp), each tensor its own type (gguf_recipe.hpp
// picks them as llama.cpp's mixes do), or filled with random valid blocks as the file is written (huge
// synthetic models that never sit in memory). Tests write small random-weight models and embedded
// tokenizers with it; the layout is the one gguf.hpp documents, tensors aligned to general.alignment (32).
#include <cstdint>
#include <expected>
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve {

// Fills out (a whole number of `type`'s blocks) with random blocks that decode to finite weights of
// about 0.02 standard deviation: random bytes for the quants and sub-block scales, the fp16 super-scales
// (d, dmin, m) set to bounded values. Deterministic in (seed, first_block), not in how calls split a
// tensor: block b's bytes come from its own generator state.
void random_blocks_fill(dtype type, std::span<std::byte> out, std::uint64_t seed, std::uint64_t first_block);

class gguf_writer {
 public:
  void add_u32(std::string_view key, std::uint32_t v);
  void add_i32(std::string_view key, std::int32_t v);
  void add_f32(std::string_view key, float v);
  void add_bool(std::string_view key, bool v);
  void add_string(std::string_view key, std::string_view v);
  void add_strings(std::string_view key, std::span<const std::string> v);
  void add_f32s(std::string_view key, std::span<const float> v);
  void add_i32s(std::string_view key, std::span<const std::int32_t> v);
  // Any value, already encoded after its u32 type (corrupt-file tests).
  void add_raw_value(std::string_view key, std::uint32_t type, std::span<const std::byte> encoded);

  // `values` (n = product of ne) stored as `type`; ne is fastest-first, so a [rows, cols] matrix
  // is {cols, rows}. A block type needs ne[0] to be a whole number of its blocks.
  void add_tensor(std::string_view name, std::vector<std::uint64_t> ne, dtype type, std::span<const float> values);
  void add_tensor(std::string_view name, std::vector<std::uint64_t> ne, gguf_tensor_type type,
                  std::span<const float> values);
  // Random valid blocks of a block type (random_blocks_fill), generated from `seed` while the file is
  // written, so the tensor costs no memory here.
  void add_tensor_random_blocks(std::string_view name, std::vector<std::uint64_t> ne, dtype type, std::uint64_t seed);
  // Bytes stored as given under any type number (tests of unknown types and lying sizes).
  void add_tensor_raw(std::string_view name, std::vector<std::uint64_t> ne, std::uint32_t type,
                      std::vector<std::byte> bytes);

  std::vector<std::byte> bytes() const;  // the whole file
  // Streams the file to path (random tensors generated a slice at a time).
  std::expected<void, std::string> write(const std::filesystem::path& path) const;
  // The same model as a split one (gguf_split.hpp), n_splits files named as llama.cpp's gguf-split names
  // them (gguf_split_path(prefix, s, n_splits)): the first with every metadata key, each with the split
  // keys and a run of the tensors, as even in count as they divide. Returns the first file's path.
  std::expected<std::filesystem::path, std::string> write_splits(std::string_view prefix, int n_splits) const;

 private:
  struct tensor {
    std::string name;
    std::vector<std::uint64_t> ne;
    std::uint32_t type = 0;
    std::vector<std::byte> data;
    std::uint64_t n_bytes = 0;                 // data.size(), or the random blocks' size
    std::optional<std::uint64_t> random_seed;  // set: random blocks of dtype random_type, not data
    dtype random_type = dtype::f32;
  };
  // Everything before the first tensor's bytes of a file holding metadata kv and tensors [first, last).
  std::vector<std::byte> header(std::span<const std::byte> kv, std::uint64_t n_kv, std::size_t first, std::size_t last) const;
  std::expected<void, std::string> write_file(const std::filesystem::path& path, std::span<const std::byte> head,
                                              std::size_t first, std::size_t last) const;
  // Tensor i's bytes [offset, offset + out.size()) (random ones generated), then its padding is the caller's.
  void tensor_slice(std::size_t i, std::uint64_t offset, std::span<std::byte> out) const;
  std::vector<std::byte> kv_;  // encoded key/value records
  std::uint64_t n_kv_ = 0;
  std::vector<tensor> tensors_;
};

}  // namespace pagedserve
