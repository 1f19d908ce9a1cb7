// The BPE model of a tokenizer.json: vocabulary, merge ranks, and the merge loop. A word starts as
// one symbol per character (per byte for byte-level models, whose vocabulary spells bytes in the
// GPT-2 alphabet), then the adjacent pair with the lowest merge rank is merged, leftmost first,
// until no pair has a rank: Hugging Face's Word::merge_all, with a heap over a linked list so a
// long word costs n log n rather than n^2.
#include <algorithm>
#include <charconv>

#include "tokenizer/hf_tokenizer_internal.hpp"

namespace pagedserve::hf {
namespace {

// Ids are dense in real files; one far past the entry count is corruption, not a reason to
// allocate a table that large.
std::int64_t max_vocab_id(std::size_t n_entries) { return 2 * static_cast<std::int64_t>(n_entries) + 1024; }

std::uint64_t pair_key(token_id a, token_id b) {
  return (static_cast<std::uint64_t>(static_cast<std::uint32_t>(a)) << 32) | static_cast<std::uint32_t>(b);
}

std::uint64_t mix(std::uint64_t k) {  // splitmix64's finalizer
  k ^= k >> 30;
  k *= 0xBF58476D1CE4E5B9ull;
  k ^= k >> 27;
  k *= 0x94D049BB133111EBull;
  return k ^ (k >> 31);
}

std::string byte_fallback_name(int b) {
  static constexpr char hex[] = "0123456789ABCDEF";
  return std::string{'<', '0', 'x', hex[b >> 4], hex[b & 15], '>'};
}

std::uint64_t hash_bytes(std::string_view s) {  // FNV-1a, finished by mix()
  std::uint64_t h = 0xCBF29CE484222325ull;
  for (const char c : s) h = (h ^ static_cast<unsigned char>(c)) * 0x100000001B3ull;
  return mix(h);
}

}  // namespace

void string_index::reserve(std::size_t n) {
  arena_.reserve(n * 8);
  if (n * 2 > slots_.size()) rehash(n * 2);
}

void string_index::rehash(std::size_t n_slots) {
  std::size_t cap = 16;
  while (cap < n_slots) cap <<= 1;
  std::vector<slot> old(cap);
  old.swap(slots_);
  mask_ = cap - 1;
  for (const slot& s : old) {
    if (s.id < 0) continue;
    std::size_t i = hash_bytes(std::string_view(arena_).substr(s.offset, s.length)) & mask_;
    while (slots_[i].id >= 0) i = (i + 1) & mask_;
    slots_[i] = s;
  }
}

bool string_index::insert(std::string_view key, token_id id) {
  if ((size_ + 1) * 2 > slots_.size()) rehash(std::max<std::size_t>(16, slots_.size() * 2));
  const std::uint64_t h = hash_bytes(key);
  const auto tag = static_cast<std::uint32_t>(h >> 32);
  std::size_t i = h & mask_;
  for (; slots_[i].id >= 0; i = (i + 1) & mask_)
    if (slots_[i].tag == tag && std::string_view(arena_).substr(slots_[i].offset, slots_[i].length) == key)
      return false;
  slots_[i] = {tag, static_cast<std::uint32_t>(arena_.size()), static_cast<std::uint32_t>(key.size()), id};
  arena_.append(key);
  ++size_;
  return true;
}

std::optional<token_id> string_index::find(std::string_view key) const {
  if (slots_.empty()) return std::nullopt;
  const std::uint64_t h = hash_bytes(key);
  const auto tag = static_cast<std::uint32_t>(h >> 32);
  for (std::size_t i = h & mask_; slots_[i].id >= 0; i = (i + 1) & mask_)
    if (slots_[i].tag == tag && slots_[i].length == key.size() &&
        std::string_view(arena_).substr(slots_[i].offset, slots_[i].length) == key)
      return slots_[i].id;
  return std::nullopt;
}

void merge_table::reserve(std::size_t n) {
  std::size_t cap = 16;
  while (cap < n * 2) cap <<= 1;
  slots_.assign(cap, entry{});
  mask_ = cap - 1;
}

bool merge_table::insert(token_id a, token_id b, std::int32_t rank, token_id merged) {
  const std::uint64_t key = pair_key(a, b);
  for (std::size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
    if (slots_[i].key == key) return false;
    if (slots_[i].key == ~0ull) {
      slots_[i] = {key, rank, merged};
      return true;
    }
  }
}

const merge_table::entry* merge_table::find(token_id a, token_id b) const {
  if (slots_.empty()) return nullptr;
  const std::uint64_t key = pair_key(a, b);
  for (std::size_t i = mix(key) & mask_;; i = (i + 1) & mask_) {
    if (slots_[i].key == key) return &slots_[i];
    if (slots_[i].key == ~0ull) return nullptr;
  }
}

result<bpe_model> bpe_model::from_json(simdjson::dom::element model, bool byte_level) {
  bpe_model m;
  const std::string_view type = json_type(model);
  if (type != "BPE" && !(type.empty() && json_has(model, "merges")))
    return std::unexpected("unsupported model type '" + std::string(type) + "' (only BPE is implemented)");
  for (const std::string_view key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    std::string_view v;
    if (model[key].get(v) == simdjson::SUCCESS && !v.empty())
      return std::unexpected("BPE " + std::string(key) + " is not supported");
  }
  m.byte_level_ = byte_level;
  m.byte_fallback_ = json_bool(model, "byte_fallback", false);
  m.fuse_unk_ = json_bool(model, "fuse_unk", false);
  m.ignore_merges_ = json_bool(model, "ignore_merges", false);
  simdjson::dom::element vocab, merges;
  if (model["vocab"].get(vocab) != simdjson::SUCCESS) return std::unexpected("model has no 'vocab'");
  if (auto ok = m.load_vocab(vocab); !ok) return std::unexpected(ok.error());
  if (json_has(model, "unk_token")) {
    auto unk = json_string(model, "unk_token", "model");
    if (!unk) return std::unexpected(unk.error());
    auto id = m.find(*unk);
    if (!id) return std::unexpected("model unk_token '" + std::string(*unk) + "' is not in the vocabulary");
    m.unk_id_ = *id;
  }
  m.find_byte_ids();
  if (model["merges"].get(merges) != simdjson::SUCCESS) return std::unexpected("model has no 'merges'");
  if (auto ok = m.load_merges(merges); !ok) return std::unexpected(ok.error());
  return m;
}

result<bpe_model> bpe_model::from_arrays(std::vector<std::string> tokens,
                                         const std::vector<std::pair<std::string_view, std::string_view>>& merges,
                                         const options& o) {
  bpe_model m;
  m.byte_level_ = o.byte_level;
  m.byte_fallback_ = o.byte_fallback;
  m.fuse_unk_ = o.fuse_unk;
  m.ignore_merges_ = o.ignore_merges;
  m.unk_id_ = o.unk;
  m.id_to_token_ = std::move(tokens);
  m.index_vocab();
  m.find_byte_ids();
  m.merges_.reserve(merges.size());
  std::string scratch;
  for (std::size_t i = 0; i < merges.size(); ++i)
    if (auto ok = m.add_merge(merges[i].first, merges[i].second, static_cast<std::int32_t>(i), scratch); !ok)
      return std::unexpected(ok.error());
  return m;
}

void bpe_model::find_byte_ids() {
  for (int b = 0; b < 256; ++b) {
    std::string name;
    if (byte_level_)
      utf8_append(name, byte_to_char(static_cast<unsigned char>(b)));
    else
      name = byte_fallback_name(b);
    byte_ids_[b] = find(name).value_or(-1);
  }
}

result<void> bpe_model::load_vocab(simdjson::dom::element vocab) {
  simdjson::dom::object obj;
  if (vocab.get(obj) != simdjson::SUCCESS) return std::unexpected("model 'vocab' is not an object");
  vocab_.reserve(obj.size());
  const std::int64_t max_id = max_vocab_id(obj.size());
  for (auto [key, value] : obj) {
    std::int64_t id = 0;
    if (value.get(id) != simdjson::SUCCESS || id < 0 || id >= max_id)
      return std::unexpected("vocab entry '" + std::string(key) + "' has no valid id");
    if (static_cast<std::size_t>(id) >= id_to_token_.size()) id_to_token_.resize(static_cast<std::size_t>(id) + 1);
    id_to_token_[static_cast<std::size_t>(id)] = std::string(key);
  }
  index_vocab();
  return {};
}

void bpe_model::index_vocab() {
  vocab_.reserve(id_to_token_.size());
  for (std::size_t id = 0; id < id_to_token_.size(); ++id)
    if (!id_to_token_[id].empty()) vocab_.insert(id_to_token_[id], static_cast<token_id>(id));
  if (!byte_level_) return;
  // Byte-level words arrive as raw bytes: index the vocabulary by the bytes each string spells.
  byte_vocab_.reserve(id_to_token_.size());
  std::string raw;
  for (std::size_t id = 0; id < id_to_token_.size(); ++id) {
    const std::string& text = id_to_token_[id];
    if (text.empty()) continue;
    raw.clear();
    bool all = true;
    for (std::size_t pos = 0; pos < text.size() && all;) {
      const utf8_char ch = utf8_decode(text, pos);
      const int b = char_to_byte(ch.cp);
      all = b >= 0;
      raw.push_back(static_cast<char>(b));
      pos += ch.length;
    }
    if (all) byte_vocab_.insert(raw, static_cast<token_id>(id));
  }
}

result<void> bpe_model::load_merges(simdjson::dom::element merges) {
  simdjson::dom::array list;
  if (merges.get(list) != simdjson::SUCCESS) return std::unexpected("model 'merges' is not an array");
  merges_.reserve(list.size());
  std::int32_t rank = 0;
  std::string joined;
  for (simdjson::dom::element e : list) {
    std::string_view a, b, line;
    if (e.get(line) == simdjson::SUCCESS) {  // "a b"
      const std::size_t sp = line.find(' ');
      if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos)
        return std::unexpected("merge " + std::to_string(rank) + " '" + std::string(line) + "' is not two tokens");
      a = line.substr(0, sp), b = line.substr(sp + 1);
    } else {  // ["a", "b"]
      simdjson::dom::array pair;
      if (e.get(pair) != simdjson::SUCCESS || pair.size() != 2 || pair.at(0).get(a) != simdjson::SUCCESS ||
          pair.at(1).get(b) != simdjson::SUCCESS)
        return std::unexpected("merge " + std::to_string(rank) + " is neither \"a b\" nor [\"a\", \"b\"]");
    }
    if (auto ok = add_merge(a, b, rank, joined); !ok) return ok;
    ++rank;
  }
  return {};
}

result<void> bpe_model::add_merge(std::string_view a, std::string_view b, std::int32_t rank, std::string& joined) {
  joined.assign(a).append(b);
  const auto ia = find(a), ib = find(b), im = find(joined);
  if (!ia || !ib || !im)
    return std::unexpected("merge " + std::to_string(rank) + " (" + std::string(a) + " " + std::string(b) +
                           ") uses a token missing from the vocabulary");
  merges_.insert(*ia, *ib, rank, *im);  // a repeated pair keeps its first (best) rank
  return {};
}

std::optional<token_id> bpe_model::find(std::string_view token) const { return vocab_.find(token); }

void bpe_model::initial_symbols(std::string_view word, std::vector<token_id>& syms) const {
  if (byte_level_) {
    for (const char c : word) {
      const token_id id = byte_ids_[static_cast<unsigned char>(c)];
      if (id >= 0)
        syms.push_back(id);
      else if (unk_id_ >= 0 && !(fuse_unk_ && !syms.empty() && syms.back() == unk_id_))
        syms.push_back(unk_id_);
    }
    return;
  }
  for (std::size_t pos = 0; pos < word.size();) {
    const std::size_t n = utf8_decode(word, pos).length;
    const std::string_view ch = word.substr(pos, n);
    pos += n;
    if (const auto id = vocab_.find(ch)) {
      syms.push_back(*id);
      continue;
    }
    if (byte_fallback_ &&
        std::all_of(ch.begin(), ch.end(), [&](char c) { return byte_ids_[static_cast<unsigned char>(c)] >= 0; })) {
      for (const char c : ch) syms.push_back(byte_ids_[static_cast<unsigned char>(c)]);
      continue;
    }
    if (unk_id_ < 0) continue;  // Hugging Face would fail here; dropping the character is the kinder answer
    if (fuse_unk_ && !syms.empty() && syms.back() == unk_id_) continue;
    syms.push_back(unk_id_);
  }
}

void bpe_model::merge(std::vector<token_id>& syms) const {
  const int n = static_cast<int>(syms.size());
  if (n < 2) return;
  std::vector<int> prev(n), next(n);
  for (int i = 0; i < n; ++i) prev[i] = i - 1, next[i] = i + 1 < n ? i + 1 : -1;
  struct candidate {
    std::int32_t rank;
    int pos;
    token_id merged;
    bool operator>(const candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::vector<candidate> heap;
  heap.reserve(static_cast<std::size_t>(n));
  const auto push = [&](int left) {
    if (left < 0 || next[left] < 0) return;
    if (const auto* m = merges_.find(syms[left], syms[next[left]])) {
      heap.push_back({m->rank, left, m->merged});
      std::push_heap(heap.begin(), heap.end(), std::greater<>{});
    }
  };
  for (int i = 0; i + 1 < n; ++i) push(i);
  std::vector<bool> dead(n, false);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const candidate c = heap.back();
    heap.pop_back();
    if (dead[c.pos] || next[c.pos] < 0) continue;
    const int right = next[c.pos];
    const auto* m = merges_.find(syms[c.pos], syms[right]);
    if (m == nullptr || m->merged != c.merged || m->rank != c.rank) continue;  // stale: a neighbour changed
    syms[c.pos] = c.merged;
    dead[right] = true;
    next[c.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = c.pos;
    push(prev[c.pos]);
    push(c.pos);
  }
  int out = 0;
  for (int i = 0; i >= 0; i = next[i]) syms[out++] = syms[i];
  syms.resize(static_cast<std::size_t>(out));
}

void bpe_model::encode_word(std::string_view word, std::vector<token_id>& out) const {
  if (ignore_merges_) {  // a word the vocabulary already has is one token, whatever the merges say
    if (const auto id = (byte_level_ ? byte_vocab_ : vocab_).find(word)) {
      out.push_back(*id);
      return;
    }
  }
  std::vector<token_id> syms;
  syms.reserve(word.size());
  initial_symbols(word, syms);
  merge(syms);
  out.insert(out.end(), syms.begin(), syms.end());
}

}  // namespace pagedserve::hf
