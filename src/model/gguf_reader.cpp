// Parses a GGUF file's header, metadata and tensor directory with a cursor that checks every read
// against the end of the mapping. Sizes come from the file, so each is compared with the bytes that
// remain before anything is allocated or walked: an array claiming 2^60 elements fails at once.
#include <algorithm>
#include <bit>
#include <cstring>
#include <unordered_set>

#include "model/ggml_blocks.hpp"
#include "model/gguf.hpp"
#include "model/gguf_split.hpp"

namespace pagedserve {
namespace {

constexpr std::uint64_t max_dims = 4;           // GGML_MAX_DIMS
constexpr std::uint64_t max_key_bytes = 65536;  // keys and tensor names are short; a huge one is corruption
constexpr int max_array_depth = 4;              // arrays of arrays are legal; deeper nesting is an attack

struct type_layout {
  const char* name;
  std::uint32_t block, bytes;  // elements per block, bytes per block (0: layout unknown here)
};

// ggml's type table (ggml.c type_traits): names for every assigned number. The layouts of the types
// pagedserve decodes (F32, F16, BF16 and the block formats of ggml_blocks.hpp) come from their dtype;
// the table gives the others' (0: not known here), so every tensor's extent is still checked.
type_layout layout_of(std::uint32_t t) {
  static constexpr type_layout table[] = {
      {"F32", 0, 0},      {"F16", 0, 0},       {"Q4_0", 0, 0},      {"Q4_1", 0, 0},     {"Q4_2", 0, 0},
      {"Q4_3", 0, 0},     {"Q5_0", 0, 0},      {"Q5_1", 0, 0},      {"Q8_0", 0, 0},     {"Q8_1", 32, 36},
      {"Q2_K", 0, 0},     {"Q3_K", 0, 0},      {"Q4_K", 0, 0},      {"Q5_K", 0, 0},     {"Q6_K", 0, 0},
      {"Q8_K", 256, 292}, {"IQ2_XXS", 256, 66}, {"IQ2_XS", 256, 74}, {"IQ3_XXS", 256, 98}, {"IQ1_S", 256, 50},
      {"IQ4_NL", 0, 0},   {"IQ3_S", 256, 110}, {"IQ2_S", 256, 82},  {"IQ4_XS", 0, 0},   {"I8", 1, 1},
      {"I16", 1, 2},      {"I32", 1, 4},       {"I64", 1, 8},       {"F64", 1, 8},      {"IQ1_M", 256, 56},
      {"BF16", 0, 0},
  };
  if (t >= std::size(table)) return {nullptr, 0, 0};
  type_layout l = table[t];
  if (const std::optional<dtype> d = dtype_of_ggml_type(t)) {
    const block_layout b = block_layout_of(*d);
    l.block = is_block_quantized(*d) ? static_cast<std::uint32_t>(b.elements) : 1;
    l.bytes = is_block_quantized(*d) ? static_cast<std::uint32_t>(b.bytes) : static_cast<std::uint32_t>(dtype_size(*d));
  }
  return l;
}

std::size_t scalar_size(gguf_value_type t) {
  switch (t) {
    case gguf_value_type::u8: case gguf_value_type::i8: case gguf_value_type::boolean: return 1;
    case gguf_value_type::u16: case gguf_value_type::i16: return 2;
    case gguf_value_type::u32: case gguf_value_type::i32: case gguf_value_type::f32: return 4;
    case gguf_value_type::u64: case gguf_value_type::i64: case gguf_value_type::f64: return 8;
    default: return 0;  // string, array: variable
  }
}

template <class T>
T load(const std::byte* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Reads little-endian values from [pos, end) of the mapping, failing instead of overrunning.
class cursor {
 public:
  cursor(std::span<const std::byte> bytes) : bytes_(bytes) {}
  std::uint64_t pos() const { return pos_; }
  std::uint64_t left() const { return bytes_.size() - pos_; }

  std::expected<std::span<const std::byte>, std::string> take(std::uint64_t n, std::string_view what) {
    if (n > left())
      return std::unexpected(std::string(what) + " at byte " + std::to_string(pos_) + " needs " + std::to_string(n) +
                             " bytes but only " + std::to_string(left()) + " remain");
    auto s = bytes_.subspan(pos_, n);
    pos_ += n;
    return s;
  }
  template <class T>
  std::expected<T, std::string> read(std::string_view what) {
    auto s = take(sizeof(T), what);
    if (!s) return std::unexpected(s.error());
    return load<T>(s->data());
  }
  std::expected<std::string_view, std::string> string(std::string_view what, std::uint64_t limit) {
    auto n = read<std::uint64_t>(what);
    if (!n) return std::unexpected(n.error());
    if (*n > limit)
      return std::unexpected(std::string(what) + " claims " + std::to_string(*n) + " bytes (at most " +
                             std::to_string(limit) + " allowed)");
    auto s = take(*n, what);
    if (!s) return std::unexpected(s.error());
    return std::string_view(reinterpret_cast<const char*>(s->data()), s->size());
  }

 private:
  std::span<const std::byte> bytes_;
  std::uint64_t pos_ = 0;
};

std::expected<gguf_value_type, std::string> value_type(std::uint32_t raw, const std::string& key) {
  if (raw > static_cast<std::uint32_t>(gguf_value_type::f64))
    return std::unexpected("metadata '" + key + "' has unknown value type " + std::to_string(raw));
  return static_cast<gguf_value_type>(raw);
}

// Skips `count` array elements of type t (checked), for arrays of strings and nested arrays.
std::expected<void, std::string> skip_elements(cursor& c, gguf_value_type t, std::uint64_t count, const std::string& key,
                                               int depth) {
  if (depth > max_array_depth) return std::unexpected("metadata '" + key + "' nests arrays too deeply");
  if (const std::size_t size = scalar_size(t)) {
    if (count > c.left() / size)
      return std::unexpected("metadata '" + key + "' array of " + std::to_string(count) + " elements runs past the end of the file");
    if (auto s = c.take(count * size, key); !s) return std::unexpected(s.error());
    return {};
  }
  // Every string or nested array takes at least 8 bytes, which bounds the loop by the file size.
  if (count > c.left() / 8)
    return std::unexpected("metadata '" + key + "' array of " + std::to_string(count) + " elements runs past the end of the file");
  for (std::uint64_t i = 0; i < count; ++i) {
    if (t == gguf_value_type::string) {
      if (auto s = c.string("metadata '" + key + "' element", c.left()); !s) return std::unexpected(s.error());
      continue;
    }
    auto sub_raw = c.read<std::uint32_t>(key);
    if (!sub_raw) return std::unexpected(sub_raw.error());
    auto sub = value_type(*sub_raw, key);
    if (!sub) return std::unexpected(sub.error());
    auto n = c.read<std::uint64_t>(key);
    if (!n) return std::unexpected(n.error());
    if (auto r = skip_elements(c, *sub, *n, key, depth + 1); !r) return r;
  }
  return {};
}

std::expected<gguf_value, std::string> read_value(cursor& c, gguf_value_type t, const std::string& key) {
  gguf_value v;
  v.type = t;
  if (t == gguf_value_type::string) {
    auto s = c.string("metadata '" + key + "' string", c.left());
    if (!s) return std::unexpected(s.error());
    v.str = *s;
    return v;
  }
  if (t == gguf_value_type::array) {
    auto et = c.read<std::uint32_t>(key);
    if (!et) return std::unexpected(et.error());
    auto elem = value_type(*et, key);
    if (!elem) return std::unexpected(elem.error());
    auto n = c.read<std::uint64_t>(key);
    if (!n) return std::unexpected(n.error());
    if (auto r = skip_elements(c, *elem, *n, key, 1); !r) return std::unexpected(r.error());
    v.elem_type = *elem;
    v.count = *n;
    return v;  // raw is filled by the caller, which knows where the elements start
  }
  auto bytes = c.take(scalar_size(t), "metadata '" + key + "' value");
  if (!bytes) return std::unexpected(bytes.error());
  const std::byte* p = bytes->data();
  switch (t) {
    case gguf_value_type::u8: v.u = load<std::uint8_t>(p); break;
    case gguf_value_type::boolean: v.u = load<std::uint8_t>(p) != 0; break;
    case gguf_value_type::u16: v.u = load<std::uint16_t>(p); break;
    case gguf_value_type::u32: v.u = load<std::uint32_t>(p); break;
    case gguf_value_type::u64: v.u = load<std::uint64_t>(p); break;
    case gguf_value_type::i8: v.i = load<std::int8_t>(p); break;
    case gguf_value_type::i16: v.i = load<std::int16_t>(p); break;
    case gguf_value_type::i32: v.i = load<std::int32_t>(p); break;
    case gguf_value_type::i64: v.i = load<std::int64_t>(p); break;
    case gguf_value_type::f32: v.f = load<float>(p); break;
    case gguf_value_type::f64: v.f = load<double>(p); break;
    default: break;
  }
  if (t == gguf_value_type::i8 || t == gguf_value_type::i16 || t == gguf_value_type::i32 || t == gguf_value_type::i64) {
    if (v.i >= 0) v.u = static_cast<std::uint64_t>(v.i);
  } else if (v.u <= static_cast<std::uint64_t>(INT64_MAX)) {
    v.i = static_cast<std::int64_t>(v.u);
  }
  return v;
}

bool is_integer(gguf_value_type t) {
  return t != gguf_value_type::f32 && t != gguf_value_type::f64 && t != gguf_value_type::boolean &&
         t != gguf_value_type::string && t != gguf_value_type::array;
}
bool is_signed(gguf_value_type t) {
  return t == gguf_value_type::i8 || t == gguf_value_type::i16 || t == gguf_value_type::i32 || t == gguf_value_type::i64;
}

std::expected<gguf_tensor_info, std::string> read_tensor_info(cursor& c, std::uint64_t index) {
  const std::string where = "tensor #" + std::to_string(index);
  gguf_tensor_info t;
  auto name = c.string(where + " name", max_key_bytes);
  if (!name) return std::unexpected(name.error());
  t.name = std::string(*name);
  const std::string what = "tensor '" + t.name + "'";
  auto n_dims = c.read<std::uint32_t>(what);
  if (!n_dims) return std::unexpected(n_dims.error());
  if (*n_dims == 0 || *n_dims > max_dims)
    return std::unexpected(what + " has " + std::to_string(*n_dims) + " dimensions (1 to 4 allowed)");
  std::uint64_t n = 1;
  for (std::uint32_t d = 0; d < *n_dims; ++d) {
    auto ne = c.read<std::uint64_t>(what);
    if (!ne) return std::unexpected(ne.error());
    if (*ne == 0 || *ne > (std::uint64_t{1} << 40) || n > (std::uint64_t{1} << 60) / *ne)
      return std::unexpected(what + " has an impossible dimension " + std::to_string(*ne));
    n *= *ne;
    t.ne.push_back(*ne);
  }
  auto type = c.read<std::uint32_t>(what);
  auto offset = c.read<std::uint64_t>(what);
  if (!type || !offset) return std::unexpected(!type ? type.error() : offset.error());
  t.type = *type;
  t.offset = *offset;
  const type_layout l = layout_of(t.type);
  if (l.bytes > 0 && t.ne[0] % l.block != 0)
    return std::unexpected(what + " of type " + l.name + " has " + std::to_string(t.ne[0]) +
                           " columns, not a multiple of its block of " + std::to_string(l.block));
  t.n_bytes = gguf_tensor_bytes(t.type, n);
  return t;
}

}  // namespace

std::string gguf_tensor_type_name(std::uint32_t type) {
  const type_layout l = layout_of(type);
  return l.name ? l.name : "type " + std::to_string(type);
}

std::optional<std::uint64_t> gguf_tensor_bytes(std::uint32_t type, std::uint64_t n_elements) {
  const type_layout l = layout_of(type);
  if (l.bytes == 0 || n_elements % l.block != 0) return std::nullopt;
  return n_elements / l.block * l.bytes;  // n_elements < 2^60 and bytes/block < 2^9 / 2^0: no overflow
}

std::uint64_t gguf_tensor_info::n_elements() const {
  std::uint64_t n = 1;
  for (auto d : ne) n *= d;
  return n;
}

std::expected<gguf_file, std::string> gguf_file::open_one(const std::filesystem::path& path) {
  auto mapped = mapped_file::open(path);
  if (!mapped) return std::unexpected(mapped.error());
  auto owner = std::make_shared<mapped_file>(std::move(*mapped));
  const auto bytes = owner->bytes();
  return parse(bytes, std::move(owner), path.string());
}

std::expected<gguf_file, std::string> gguf_file::open(const std::filesystem::path& path) {
  auto file = open_one(path);
  if (file && file->find(gguf_split_count_key)) {
    if (auto joined = file->join_splits(path); !joined) return std::unexpected(joined.error());
  }
  return file;
}

std::expected<gguf_file, std::string> gguf_file::parse(std::span<const std::byte> bytes, std::shared_ptr<const void> keep,
                                                       std::string name) {
  gguf_file f;
  f.name_ = std::move(name);
  f.keep_ = std::move(keep);
  auto fail = [&](const std::string& what) { return std::unexpected(f.name_ + ": " + what); };
  cursor c(bytes);
  auto magic = c.take(4, "magic");
  if (!magic || std::memcmp(magic->data(), "GGUF", 4) != 0) return fail("not a GGUF file (no GGUF magic)");
  auto version = c.read<std::uint32_t>("version");
  auto n_tensors = c.read<std::uint64_t>("tensor count");
  auto n_kv = c.read<std::uint64_t>("metadata count");
  if (!version || !n_tensors || !n_kv) return fail("truncated GGUF header");
  if (*version != 2 && *version != 3)
    return fail("GGUF version " + std::to_string(*version) + " is not supported (2 and 3 are)");
  f.version_ = *version;
  // Each key/value takes at least 12 bytes and each tensor info at least 24: counts beyond that are lies.
  if (*n_kv > c.left() / 12 || *n_tensors > c.left() / 24)
    return fail("header claims " + std::to_string(*n_kv) + " metadata entries and " + std::to_string(*n_tensors) +
                " tensors, more than the file can hold");

  std::unordered_set<std::string_view> keys;
  f.kv_.reserve(*n_kv);
  for (std::uint64_t i = 0; i < *n_kv; ++i) {
    auto key = c.string("metadata key #" + std::to_string(i), max_key_bytes);
    if (!key) return fail(key.error());
    auto raw_type = c.read<std::uint32_t>("metadata '" + std::string(*key) + "' type");
    if (!raw_type) return fail(raw_type.error());
    auto type = value_type(*raw_type, std::string(*key));
    if (!type) return fail(type.error());
    const std::uint64_t start = c.pos();
    auto v = read_value(c, *type, std::string(*key));
    if (!v) return fail(v.error());
    if (*type == gguf_value_type::array) {
      const std::uint64_t head = 12;  // element type + count
      v->raw = bytes.subspan(start + head, c.pos() - start - head);
    }
    if (!keys.insert(*key).second) return fail("metadata key '" + std::string(*key) + "' appears twice");
    f.kv_.emplace_back(std::string(*key), *v);
  }

  if (const gguf_value* a = f.find("general.alignment")) {
    if (a->type != gguf_value_type::u32 || a->u == 0 || !std::has_single_bit(a->u))
      return fail("general.alignment must be a u32 power of two");
    f.alignment_ = a->u;
  }

  std::unordered_set<std::string> names;
  f.tensors_.reserve(*n_tensors);
  for (std::uint64_t i = 0; i < *n_tensors; ++i) {
    auto t = read_tensor_info(c, i);
    if (!t) return fail(t.error());
    if (!names.insert(t->name).second) return fail("tensor '" + t->name + "' appears twice");
    f.tensors_.push_back(std::move(*t));
  }

  const std::uint64_t padding = (f.alignment_ - c.pos() % f.alignment_) % f.alignment_;
  f.data_offset_ = c.pos() + padding;
  if (*n_tensors > 0 && f.data_offset_ > bytes.size()) return fail("truncated before the tensor data");
  const std::uint64_t data_size = bytes.size() - std::min<std::uint64_t>(f.data_offset_, bytes.size());
  for (gguf_tensor_info& t : f.tensors_) {
    const std::string what = "tensor '" + t.name + "'";
    if (t.offset % f.alignment_ != 0)
      return fail(what + " offset " + std::to_string(t.offset) + " is not a multiple of the alignment " +
                  std::to_string(f.alignment_));
    if (t.offset > data_size) return fail(what + " starts at data offset " + std::to_string(t.offset) + ", past the end of the file");
    if (t.n_bytes && *t.n_bytes > data_size - t.offset)
      return fail(what + " (" + std::to_string(*t.n_bytes) + " bytes at data offset " + std::to_string(t.offset) +
                  ") runs past the end of the file (" + std::to_string(data_size) + " data bytes)");
    t.data = bytes.data() + f.data_offset_ + t.offset;
  }
  if (f.data_offset_ < bytes.size()) f.sections_.push_back(bytes.subspan(f.data_offset_));
  return f;
}

const gguf_value* gguf_file::find(std::string_view key) const {
  for (const auto& [k, v] : kv_)
    if (k == key) return &v;
  return nullptr;
}

const gguf_tensor_info* gguf_file::tensor(std::string_view name) const {
  for (const auto& t : tensors_)
    if (t.name == name) return &t;
  return nullptr;
}

namespace {

std::string missing(const gguf_file& f, std::string_view key) {
  return f.name() + ": missing metadata '" + std::string(key) + "'";
}
std::string mistyped(const gguf_file& f, std::string_view key, std::string_view want) {
  return f.name() + ": metadata '" + std::string(key) + "' is not " + std::string(want);
}

}  // namespace

std::expected<std::string_view, std::string> gguf_file::get_string(std::string_view key) const {
  const gguf_value* v = find(key);
  if (!v) return std::unexpected(missing(*this, key));
  if (v->type != gguf_value_type::string) return std::unexpected(mistyped(*this, key, "a string"));
  return v->str;
}

std::expected<std::uint64_t, std::string> gguf_file::get_uint(std::string_view key) const {
  const gguf_value* v = find(key);
  if (!v) return std::unexpected(missing(*this, key));
  if (!is_integer(v->type) || (is_signed(v->type) && v->i < 0))
    return std::unexpected(mistyped(*this, key, "a non-negative integer"));
  return v->u;
}

std::expected<double, std::string> gguf_file::get_float(std::string_view key) const {
  const gguf_value* v = find(key);
  if (!v) return std::unexpected(missing(*this, key));
  if (v->type != gguf_value_type::f32 && v->type != gguf_value_type::f64)
    return std::unexpected(mistyped(*this, key, "a float"));
  return v->f;
}

std::expected<bool, std::string> gguf_file::get_bool(std::string_view key) const {
  const gguf_value* v = find(key);
  if (!v) return std::unexpected(missing(*this, key));
  if (v->type != gguf_value_type::boolean) return std::unexpected(mistyped(*this, key, "a bool"));
  return v->u != 0;
}

std::expected<std::vector<std::string_view>, std::string> gguf_file::get_strings(std::string_view key) const {
  const gguf_value* v = find(key);
  if (!v) return std::unexpected(missing(*this, key));
  if (v->type != gguf_value_type::array || v->elem_type != gguf_value_type::string)
    return std::unexpected(mistyped(*this, key, "an array of strings"));
  std::vector<std::string_view> out;
  out.reserve(v->count);
  cursor c(v->raw);  // validated by parse(): every string fits
  for (std::uint64_t i = 0; i < v->count; ++i) out.push_back(*c.string(key, c.left()));
  return out;
}

std::expected<std::vector<float>, std::string> gguf_file::get_floats(std::string_view key) const {
  const gguf_value* v = find(key);
  if (!v) return std::unexpected(missing(*this, key));
  if (v->type != gguf_value_type::array || v->elem_type != gguf_value_type::f32)
    return std::unexpected(mistyped(*this, key, "an array of f32"));
  std::vector<float> out(v->count);
  if (!out.empty()) std::memcpy(out.data(), v->raw.data(), v->count * sizeof(float));
  return out;
}

std::expected<std::vector<std::int64_t>, std::string> gguf_file::get_ints(std::string_view key) const {
  const gguf_value* v = find(key);
  if (!v) return std::unexpected(missing(*this, key));
  if (v->type != gguf_value_type::array || !is_integer(v->elem_type))
    return std::unexpected(mistyped(*this, key, "an array of integers"));
  const std::size_t size = scalar_size(v->elem_type);
  std::vector<std::int64_t> out(v->count);
  for (std::uint64_t i = 0; i < v->count; ++i) {
    const std::byte* p = v->raw.data() + i * size;
    switch (v->elem_type) {
      case gguf_value_type::u8: out[i] = load<std::uint8_t>(p); break;
      case gguf_value_type::i8: out[i] = load<std::int8_t>(p); break;
      case gguf_value_type::u16: out[i] = load<std::uint16_t>(p); break;
      case gguf_value_type::i16: out[i] = load<std::int16_t>(p); break;
      case gguf_value_type::u32: out[i] = load<std::uint32_t>(p); break;
      case gguf_value_type::i32: out[i] = load<std::int32_t>(p); break;
      default: out[i] = load<std::int64_t>(p); break;  // u64 past INT64_MAX wraps: ids never get there
    }
  }
  return out;
}

}  // namespace pagedserve
