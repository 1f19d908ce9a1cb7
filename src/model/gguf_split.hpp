#pragma once
// Split GGUF models, as llama.cpp's gguf-split writes them and the hub serves large models: one model
// in n files named <prefix>-00001-of-0000n.gguf ... <prefix>-0000n-of-0000n.gguf. The first holds every
// metadata key; each holds split.no (u16, counted from 0), split.count (u16) and split.tensors.count
// (i32, the model's tensors in all files) and a run of the tensors. gguf_file::open, given the first,
// reads them all as one file.
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace pagedserve {

inline constexpr std::string_view gguf_split_no_key = "split.no";
inline constexpr std::string_view gguf_split_count_key = "split.count";
inline constexpr std::string_view gguf_split_tensors_key = "split.tensors.count";

// What a split's file name says: "<prefix>-00002-of-00003.gguf" is split 1 (from 0) of 3.
struct gguf_split_name {
  std::string prefix;  // everything before "-00002-of-00003.gguf", directories included
  int split = 0;
  int n_splits = 0;
};
// nullopt when the name does not end as a split's does (or numbers split 0, or one past the count).
std::optional<gguf_split_name> gguf_split_name_parse(std::string_view path);

// llama.cpp's name of split `split` (from 0) of n_splits: prefix + "-%05d-of-%05d.gguf".
std::filesystem::path gguf_split_path(std::string_view prefix, int split, int n_splits);

}  // namespace pagedserve
