// Split GGUF models: llama.cpp's file names, and the first split's gguf_file taking in the others.
#include "model/gguf_split.hpp"

#include <charconv>
#include <cstdio>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "model/gguf.hpp"

namespace pagedserve {
namespace {

// A split number as llama.cpp writes it: five digits at least, decimal.
std::optional<int> split_number(std::string_view digits) {
  int v = 0;
  if (digits.size() < 5 || digits.size() > 9) return std::nullopt;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), v);
  if (ec != std::errc{} || end != digits.data() + digits.size()) return std::nullopt;
  return v;
}

// The split's own split.no / split.count, which must be what its name says.
std::expected<void, std::string> check_split_keys(const gguf_file& f, int split, int n_splits) {
  auto no = f.get_uint(gguf_split_no_key);
  auto count = f.get_uint(gguf_split_count_key);
  if (!no) return std::unexpected(f.name() + ": " + no.error());
  if (!count) return std::unexpected(f.name() + ": " + count.error());
  if (*no != static_cast<std::uint64_t>(split) || *count != static_cast<std::uint64_t>(n_splits))
    return std::unexpected(f.name() + ": says it is split " + std::to_string(*no + 1) + " of " + std::to_string(*count) +
                           ", where split " + std::to_string(split + 1) + " of " + std::to_string(n_splits) +
                           " was expected");
  return {};
}

}  // namespace

std::optional<gguf_split_name> gguf_split_name_parse(std::string_view path) {
  constexpr std::string_view ext = ".gguf", of = "-of-";
  if (!path.ends_with(ext)) return std::nullopt;
  std::string_view stem = path.substr(0, path.size() - ext.size());
  const std::size_t of_at = stem.rfind(of);
  if (of_at == std::string_view::npos || of_at == 0) return std::nullopt;
  const std::size_t dash = stem.rfind('-', of_at - 1);
  if (dash == std::string_view::npos) return std::nullopt;
  const auto split = split_number(stem.substr(dash + 1, of_at - dash - 1));
  const auto count = split_number(stem.substr(of_at + of.size()));
  if (!split || !count || *split < 1 || *split > *count) return std::nullopt;
  return gguf_split_name{std::string(stem.substr(0, dash)), *split - 1, *count};
}

std::filesystem::path gguf_split_path(std::string_view prefix, int split, int n_splits) {
  char suffix[48];
  std::snprintf(suffix, sizeof suffix, "-%05d-of-%05d.gguf", split + 1, n_splits);
  return std::string(prefix) + suffix;
}

std::expected<void, std::string> gguf_file::join_splits(const std::filesystem::path& path) {
  auto count = get_uint(gguf_split_count_key);
  if (!count) return std::unexpected(name_ + ": " + count.error());
  if (*count == 0 || *count > 99999) return std::unexpected(name_ + ": split.count " + std::to_string(*count) + " is not a split count");
  const int n = static_cast<int>(*count);
  if (n == 1) return {};
  auto no = get_uint(gguf_split_no_key);
  if (!no) return std::unexpected(name_ + ": " + no.error());
  const auto named = gguf_split_name_parse(path.string());
  if (*no != 0) {
    const std::string first = named ? gguf_split_path(named->prefix, 0, n).filename().string() : "its -00001-of- file";
    return std::unexpected(name_ + ": this is split " + std::to_string(*no + 1) + " of " + std::to_string(n) +
                           " of a split model; open its first file, " + first);
  }
  if (!named || named->split != 0 || named->n_splits != n)
    return std::unexpected(name_ + ": the first of " + std::to_string(n) +
                           " splits, but not named as llama.cpp names them (<name>-00001-of-" +
                           gguf_split_path("", 0, n).string().substr(10) + "), so its other files cannot be found");
  auto total = get_uint(gguf_split_tensors_key);
  if (!total) return std::unexpected(name_ + ": " + total.error());

  std::vector<std::shared_ptr<const void>> storages{keep_};
  std::unordered_set<std::string> names;
  for (const gguf_tensor_info& t : tensors_) names.insert(t.name);
  std::vector<gguf_file> others;
  others.reserve(n - 1);
  for (int s = 1; s < n; ++s) {
    const std::filesystem::path split_path = gguf_split_path(named->prefix, s, n);
    std::error_code absent;
    if (!std::filesystem::is_regular_file(split_path, absent))
      return std::unexpected(name_ + ": split " + std::to_string(s + 1) + " of " + std::to_string(n) + " (" +
                             split_path.string() + ") is missing");
    auto split = open_one(split_path);
    if (!split) return std::unexpected(split.error());
    if (auto ok = check_split_keys(*split, s, n); !ok) return ok;
    storages.push_back(split->keep_);
    others.push_back(std::move(*split));
  }
  for (gguf_file& other : others) {
    sections_.insert(sections_.end(), other.sections_.begin(), other.sections_.end());
    for (gguf_tensor_info& t : other.tensors_) {
      if (!names.insert(t.name).second)
        return std::unexpected(other.name_ + ": tensor '" + t.name + "' is also in an earlier split");
      tensors_.push_back(std::move(t));
    }
  }
  if (tensors_.size() != *total)
    return std::unexpected(name_ + ": the splits hold " + std::to_string(tensors_.size()) + " tensors where split.tensors.count says " +
                           std::to_string(*total));
  keep_ = std::make_shared<std::vector<std::shared_ptr<const void>>>(std::move(storages));
  n_splits_ = n;
  return {};
}

}  // namespace pagedserve
