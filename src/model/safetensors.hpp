#pragma once
// Hugging Face safetensors: an 8-byte little-endian header length, a JSON header
// {name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {...}}, then the tensor bytes.
// Files are mapped, never copied; every offset, size and shape in the header is checked against
// the file before a tensor is handed out, so a lying header is an error, not a wild read.
#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "model/mapped_file.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve {

struct safetensors_tensor {
  std::string name;
  std::string dtype_name;            // as the header spells it: "BF16", "F32", "I64", ...
  std::optional<dtype> type;         // set for the dtypes the kernels read (F32, BF16, F16)
  std::vector<std::int64_t> shape;
  const std::byte* data = nullptr;   // inside the file mapping
  std::size_t n_bytes = 0;
};

// The validated header of a whole safetensors file held in `bytes`: tensors point into bytes.
// Split from safetensors_file::open so the parser runs on bytes from anywhere (the fuzzer).
struct safetensors_header {
  std::vector<safetensors_tensor> tensors;     // in header order
  std::map<std::string, std::string> metadata;  // "__metadata__"
};
std::expected<safetensors_header, std::string> safetensors_parse(std::span<const std::byte> bytes);

// One mapped .safetensors file and its validated tensor table.
class safetensors_file {
 public:
  static std::expected<safetensors_file, std::string> open(const std::filesystem::path& path);

  const safetensors_tensor* find(std::string_view name) const;
  const std::vector<safetensors_tensor>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  const std::filesystem::path& path() const { return path_; }
  // Keeps the bytes of every tensor alive.
  std::shared_ptr<const mapped_file> mapping() const { return file_; }

 private:
  std::filesystem::path path_;
  std::shared_ptr<const mapped_file> file_;
  std::vector<safetensors_tensor> tensors_;
  std::unordered_map<std::string, std::size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// The tensors of a Hugging Face folder: the shards named by model.safetensors.index.json's
// weight_map, else model.safetensors, else every *.safetensors in the folder.
class safetensors_set {
 public:
  static std::expected<safetensors_set, std::string> open_folder(const std::filesystem::path& dir);
  safetensors_set() = default;
  safetensors_set(safetensors_set&&) = default;  // by_name_ points into files_' heap buffers: move only
  safetensors_set& operator=(safetensors_set&&) = default;
  safetensors_set(const safetensors_set&) = delete;
  safetensors_set& operator=(const safetensors_set&) = delete;

  const safetensors_tensor* find(std::string_view name) const;
  const std::vector<safetensors_file>& files() const { return files_; }

 private:
  std::vector<safetensors_file> files_;
  std::unordered_map<std::string, const safetensors_tensor*> by_name_;
};

// One tensor to write: its name, stored dtype, shape, and a function that fills its bytes
// (product(shape) * dtype_size(type) of them) when the writer reaches it, so large models stream
// to disk one tensor at a time.
struct safetensors_entry {
  std::string name;
  dtype type = dtype::f32;
  std::vector<std::int64_t> shape;
  std::function<void(std::span<std::byte>)> fill;
};

// An entry whose bytes are src (fp32, product(shape) values) rounded to `type`.
safetensors_entry safetensors_entry_from_f32(std::string name, std::vector<std::int64_t> shape, const float* src,
                                             dtype type);

// Writes the header (padded to 8 bytes, as the reference implementation does) and the tensors in order.
std::expected<void, std::string> safetensors_write(const std::filesystem::path& path,
                                                   std::span<const safetensors_entry> entries,
                                                   const std::map<std::string, std::string>& metadata = {});

}  // namespace pagedserve
