#pragma once
// GGUF (llama.cpp's single-file model format, versions 2 and 3), read in place from a file mapping:
// the metadata key/values, the tensor directory, and each tensor's bytes. Every count, length and
// offset in the file is checked against the file size before it is used, so a truncated or hostile
// file is an error message, never a read past the mapping or an allocation the file merely claims.
//
// Layout: "GGUF", u32 version, u64 n_tensors, u64 n_kv, then n_kv (string key, u32 type, value),
// then n_tensors (string name, u32 n_dims, u64 ne[n_dims] fastest-first, u32 ggml type, u64 offset),
// then padding to general.alignment (default 32), then the tensor data, each tensor at data_offset +
// its offset. A string is u64 length + bytes; an array is u32 element type + u64 count + elements.
#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "model/mapped_file.hpp"

namespace pagedserve {

enum class gguf_value_type : std::uint32_t {
  u8 = 0, i8 = 1, u16 = 2, i16 = 3, u32 = 4, i32 = 5, f32 = 6, boolean = 7, string = 8, array = 9, u64 = 10,
  i64 = 11, f64 = 12,
};

// ggml tensor types this project names (the numbers are ggml's; others exist and are reported by number).
enum class gguf_tensor_type : std::uint32_t { f32 = 0, f16 = 1, q4_0 = 2, q8_0 = 8, bf16 = 30 };

// ggml's name for a type number ("Q4_K"), or "type N" for one it does not know.
std::string gguf_tensor_type_name(std::uint32_t type);
// Bytes of `n_elements` elements of `type`, when the type's block layout is known and n_elements is
// a whole number of blocks; nullopt otherwise.
std::optional<std::uint64_t> gguf_tensor_bytes(std::uint32_t type, std::uint64_t n_elements);

// One metadata value. Scalars are widened into the matching field; strings and arrays point into
// the mapping (array elements stay encoded: the typed getters of gguf_file decode them).
struct gguf_value {
  gguf_value_type type = gguf_value_type::u8;
  std::uint64_t u = 0;  // u8..u64 and bool
  std::int64_t i = 0;   // i8..i64 (also set for unsigned values that fit)
  double f = 0.0;       // f32, f64
  std::string_view str;                  // string
  gguf_value_type elem_type = gguf_value_type::u8;  // array
  std::uint64_t count = 0;                          // array: number of elements
  std::span<const std::byte> raw;                   // array: the encoded elements
};

struct gguf_tensor_info {
  std::string name;
  std::vector<std::uint64_t> ne;  // dimensions, fastest-varying first (ne[0] = columns of a matrix)
  std::uint32_t type = 0;         // ggml type number
  std::uint64_t offset = 0;       // from the data section's start
  std::optional<std::uint64_t> n_bytes;  // nullopt for a type whose block layout is not known here
  const std::byte* data = nullptr;       // inside the mapping (checked in bounds when n_bytes is known)

  std::uint64_t n_elements() const;
};

class gguf_file {
 public:
  // The first file of a split model (gguf_split.hpp) opens the model: its other files are read too and
  // their tensors join the first's (metadata is the first's), or an error says which split is amiss.
  static std::expected<gguf_file, std::string> open(const std::filesystem::path& path);
  // Parses bytes that `keep` keeps alive (tests and fuzzing hand in a buffer).
  static std::expected<gguf_file, std::string> parse(std::span<const std::byte> bytes,
                                                     std::shared_ptr<const void> keep, std::string name);

  const std::string& name() const { return name_; }  // the path, for error messages
  std::uint32_t version() const { return version_; }
  std::uint64_t alignment() const { return alignment_; }
  std::uint64_t data_offset() const { return data_offset_; }
  const std::vector<std::pair<std::string, gguf_value>>& metadata() const { return kv_; }
  const std::vector<gguf_tensor_info>& tensors() const { return tensors_; }
  std::shared_ptr<const void> storage() const { return keep_; }  // keeps the tensor bytes alive (every split's)
  int n_splits() const { return n_splits_; }
  // The tensor data of each file (one per split, in split order): what the mappings hold of the weights.
  const std::vector<std::span<const std::byte>>& data_sections() const { return sections_; }

  const gguf_value* find(std::string_view key) const;
  const gguf_tensor_info* tensor(std::string_view name) const;

  // Typed getters: an error naming the key when it is missing or of another type. Integers accept
  // any integer type whose value fits; floats accept f32 and f64.
  std::expected<std::string_view, std::string> get_string(std::string_view key) const;
  std::expected<std::uint64_t, std::string> get_uint(std::string_view key) const;
  std::expected<double, std::string> get_float(std::string_view key) const;
  std::expected<bool, std::string> get_bool(std::string_view key) const;
  std::expected<std::vector<std::string_view>, std::string> get_strings(std::string_view key) const;
  std::expected<std::vector<float>, std::string> get_floats(std::string_view key) const;
  std::expected<std::vector<std::int64_t>, std::string> get_ints(std::string_view key) const;

 private:
  // One file mapped and parsed, whatever its split keys say.
  static std::expected<gguf_file, std::string> open_one(const std::filesystem::path& path);
  // Reads splits 2..n of the split model this file is the first of (gguf_split.cpp).
  std::expected<void, std::string> join_splits(const std::filesystem::path& path);

  std::string name_;
  int n_splits_ = 1;
  std::vector<std::span<const std::byte>> sections_;
  std::uint32_t version_ = 0;
  std::uint64_t alignment_ = 32;
  std::uint64_t data_offset_ = 0;
  std::vector<std::pair<std::string, gguf_value>> kv_;
  std::vector<gguf_tensor_info> tensors_;
  std::shared_ptr<const void> keep_;
};

}  // namespace pagedserve
