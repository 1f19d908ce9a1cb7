// Reads safetensors headers with simdjson and checks every claim they make against the file.
#include <simdjson.h>

#include <algorithm>
#include <cstring>
#include <set>

#include "model/safetensors.hpp"

namespace pagedserve {
namespace {

// The reference implementation's header limit; a larger length is a corrupt or hostile file.
constexpr std::uint64_t max_header_bytes = 100u * 1024 * 1024;

// Element size of every dtype the format defines (0 = sub-byte types, which we never read).
std::optional<std::size_t> dtype_bytes(std::string_view d) {
  static const std::pair<std::string_view, std::size_t> table[] = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"F8_E8M0", 1}, {"I16", 2}, {"U16", 2},
      {"F16", 2},  {"BF16", 2}, {"I32", 4}, {"U32", 4},     {"F32", 4},     {"I64", 8},     {"U64", 8}, {"F64", 8},
      {"F4", 0},   {"F6_E2M3", 0}, {"F6_E3M2", 0}};
  for (const auto& [name, size] : table)
    if (name == d) return size;
  return std::nullopt;
}

std::optional<dtype> kernel_dtype(std::string_view d) {
  if (d == "F32") return dtype::f32;
  if (d == "BF16") return dtype::bf16;
  if (d == "F16") return dtype::f16;
  return std::nullopt;
}

using element = simdjson::dom::element;

// One header entry, checked against the data region [0, data_size).
std::expected<safetensors_tensor, std::string> parse_entry(std::string_view name, element e, const std::byte* data,
                                                           std::uint64_t data_size) {
  auto bad = [&](const std::string& what) { return std::unexpected("tensor '" + std::string(name) + "': " + what); };
  simdjson::dom::object obj;
  if (e.get_object().get(obj)) return bad("header entry is not an object");
  std::string_view dtype_str;
  if (obj["dtype"].get_string().get(dtype_str)) return bad("missing or non-string 'dtype'");
  const auto elem_size = dtype_bytes(dtype_str);
  if (!elem_size) return bad("unknown dtype '" + std::string(dtype_str) + "'");

  safetensors_tensor t;
  t.name = std::string(name);
  t.dtype_name = std::string(dtype_str);
  t.type = kernel_dtype(dtype_str);
  simdjson::dom::array shape;
  if (obj["shape"].get_array().get(shape)) return bad("missing or non-array 'shape'");
  std::uint64_t n_elements = 1;
  for (element d : shape) {
    std::uint64_t v;
    if (d.get_uint64().get(v)) return bad("shape has a non-integer or negative dimension");
    if (v > (std::uint64_t{1} << 40) || __builtin_mul_overflow(n_elements, v, &n_elements))
      return bad("shape is too large");
    t.shape.push_back(static_cast<std::int64_t>(v));
  }
  simdjson::dom::array offsets;
  if (obj["data_offsets"].get_array().get(offsets) || offsets.size() != 2) return bad("'data_offsets' is not [begin, end]");
  std::uint64_t begin, end;
  if (offsets.at(0).get_uint64().get(begin) || offsets.at(1).get_uint64().get(end))
    return bad("'data_offsets' are not non-negative integers");
  if (begin > end || end > data_size)
    return bad("data_offsets [" + std::to_string(begin) + ", " + std::to_string(end) + "] lie outside the " +
               std::to_string(data_size) + "-byte data section (truncated file?)");
  std::uint64_t want = 0;
  if (*elem_size > 0 && __builtin_mul_overflow(n_elements, *elem_size, &want)) return bad("shape is too large");
  if (*elem_size > 0 && end - begin != want)
    return bad("holds " + std::to_string(end - begin) + " bytes, but its shape and dtype " + t.dtype_name + " need " +
               std::to_string(want));
  t.data = data + begin;
  t.n_bytes = static_cast<std::size_t>(end - begin);
  return t;
}

}  // namespace

std::expected<safetensors_header, std::string> safetensors_parse(std::span<const std::byte> bytes) {
  auto bad = [](const std::string& what) { return std::unexpected(what); };
  if (bytes.size() < 8)
    return bad("file is " + std::to_string(bytes.size()) + " bytes, shorter than the 8-byte header length");
  std::uint64_t header_len;
  std::memcpy(&header_len, bytes.data(), 8);  // little endian, as is every CPU we build for
  if (header_len > max_header_bytes || header_len > bytes.size() - 8)
    return bad("header length " + std::to_string(header_len) + " exceeds the file (" + std::to_string(bytes.size()) +
               " bytes) or the 100 MiB limit: not a safetensors file, or truncated");

  simdjson::dom::parser parser;
  const simdjson::padded_string header(reinterpret_cast<const char*>(bytes.data()) + 8, header_len);
  simdjson::dom::element root;
  if (auto err = parser.parse(header).get(root)) return bad(std::string("header is not valid JSON: ") + simdjson::error_message(err));
  simdjson::dom::object obj;
  if (root.get_object().get(obj)) return bad("header is not a JSON object");

  safetensors_header h;
  std::set<std::string_view> names;  // keys as parsed: they live as long as `parser`
  const std::byte* data = bytes.data() + 8 + header_len;
  const std::uint64_t data_size = bytes.size() - 8 - header_len;
  for (auto field : obj) {
    if (field.key == "__metadata__") {
      simdjson::dom::object meta;
      if (field.value.get_object().get(meta)) return bad("__metadata__ is not an object");
      for (auto m : meta) {
        std::string_view v;
        if (m.value.get_string().get(v)) return bad("__metadata__ value '" + std::string(m.key) + "' is not a string");
        h.metadata[std::string(m.key)] = std::string(v);
      }
      continue;
    }
    auto t = parse_entry(field.key, field.value, data, data_size);
    if (!t) return bad(t.error());
    if (!names.insert(field.key).second) return bad("tensor '" + t->name + "' appears twice");
    h.tensors.push_back(std::move(*t));
  }
  return h;
}

std::expected<safetensors_file, std::string> safetensors_file::open(const std::filesystem::path& path) {
  auto mapped = mapped_file::open(path);
  if (!mapped) return std::unexpected(mapped.error());
  auto header = safetensors_parse(mapped->bytes());
  if (!header) return std::unexpected(path.string() + ": " + header.error());

  safetensors_file f;
  f.path_ = path;
  f.tensors_ = std::move(header->tensors);
  f.metadata_ = std::move(header->metadata);
  for (std::size_t i = 0; i < f.tensors_.size(); ++i) f.index_.emplace(f.tensors_[i].name, i);
  f.file_ = std::make_shared<const mapped_file>(std::move(*mapped));
  return f;
}

const safetensors_tensor* safetensors_file::find(std::string_view name) const {
  const auto it = index_.find(std::string(name));
  return it == index_.end() ? nullptr : &tensors_[it->second];
}

namespace {

// weight_map: tensor name -> shard file name, from model.safetensors.index.json.
std::expected<std::map<std::string, std::string>, std::string> read_index(const std::filesystem::path& index_path) {
  auto bad = [&](const std::string& what) { return std::unexpected(index_path.string() + ": " + what); };
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (auto err = parser.load(index_path.string()).get(root)) return bad(std::string("cannot parse: ") + simdjson::error_message(err));
  simdjson::dom::object map;
  if (root["weight_map"].get_object().get(map)) return bad("no 'weight_map' object");
  std::map<std::string, std::string> out;
  for (auto field : map) {
    std::string_view shard;
    if (field.value.get_string().get(shard)) return bad("weight_map entry '" + std::string(field.key) + "' is not a string");
    // A shard is a plain file name beside the index: never a path out of the folder.
    if (shard.empty() || shard.find('/') != std::string_view::npos || shard.find('\\') != std::string_view::npos ||
        shard == "." || shard == "..")
      return bad("weight_map names shard '" + std::string(shard) + "', which is not a file name in the folder");
    out.emplace(std::string(field.key), std::string(shard));
  }
  return out;
}

}  // namespace

std::expected<safetensors_set, std::string> safetensors_set::open_folder(const std::filesystem::path& dir) {
  std::error_code ec;
  std::vector<std::string> shard_names;
  std::map<std::string, std::string> weight_map;
  const auto index_path = dir / "model.safetensors.index.json";
  if (std::filesystem::exists(index_path, ec)) {
    auto index = read_index(index_path);
    if (!index) return std::unexpected(index.error());
    weight_map = std::move(*index);
    std::set<std::string> unique;
    for (const auto& [name, shard] : weight_map) unique.insert(shard);
    shard_names.assign(unique.begin(), unique.end());
  } else if (std::filesystem::exists(dir / "model.safetensors", ec)) {
    shard_names = {"model.safetensors"};
  } else {
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec))
      if (entry.path().extension() == ".safetensors") shard_names.push_back(entry.path().filename().string());
    std::sort(shard_names.begin(), shard_names.end());
  }
  if (shard_names.empty()) return std::unexpected(dir.string() + ": no *.safetensors weights in the folder");

  safetensors_set set;
  set.files_.reserve(shard_names.size());  // by_name_ points into files_: no reallocation after this
  for (const auto& shard : shard_names) {
    auto f = safetensors_file::open(dir / shard);
    if (!f) return std::unexpected(f.error());
    set.files_.push_back(std::move(*f));
  }
  if (!weight_map.empty()) {
    std::map<std::string, const safetensors_file*> by_shard;
    for (const auto& f : set.files_) by_shard[f.path().filename().string()] = &f;
    for (const auto& [name, shard] : weight_map) {
      const safetensors_tensor* t = by_shard.at(shard)->find(name);
      if (!t) return std::unexpected(index_path.string() + ": tensor '" + name + "' is mapped to " + shard + ", which does not hold it");
      set.by_name_[name] = t;
    }
    return set;
  }
  for (const auto& f : set.files_)
    for (const auto& t : f.tensors())
      if (!set.by_name_.emplace(t.name, &t).second)
        return std::unexpected(dir.string() + ": tensor '" + t.name + "' appears in more than one shard");
  return set;
}

const safetensors_tensor* safetensors_set::find(std::string_view name) const {
  const auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

}  // namespace pagedserve
