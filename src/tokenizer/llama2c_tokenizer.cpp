// The llama2.c tokenizer (tokenizer.bin, tok512.bin), encoding and decoding exactly as
// karpathy/llama2.c run.c encode()/decode() do, so prompt ids match the reference runner. Differences
// are only where run.c would crash or read out of bounds: corrupt files are rejected with a message,
// a vocabulary without " " falls back to byte tokens for the dummy prefix, and out-of-range ids decode
// to nothing. Lookups use a hash map instead of run.c's sorted vocabulary, and the merge loop uses a
// priority queue over a linked list (same result as run.c's rescan: highest score, leftmost on ties).
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <queue>
#include <unordered_map>
#include <utility>
#include <variant>

#include "tokenizer/tokenizer.hpp"

namespace pagedserve {
namespace {

// A read-only private mapping of a whole file, unmapped when destroyed.
class mapped_file {
 public:
  static std::expected<mapped_file, std::string> open(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return std::unexpected(std::string{"cannot open: "} + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      const int err = errno;
      ::close(fd);
      return std::unexpected(std::string{"cannot stat: "} + std::strerror(err));
    }
    if (!S_ISREG(st.st_mode)) {
      ::close(fd);
      return std::unexpected(std::string{"not a regular file"});
    }
    if (st.st_size == 0) {
      ::close(fd);
      return std::unexpected(std::string{"file is empty"});
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    void* data = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    if (data == MAP_FAILED) return std::unexpected(std::string{"cannot mmap: "} + std::strerror(err));
    return mapped_file{data, size};
  }

  mapped_file(mapped_file&& o) noexcept
      : data_(std::exchange(o.data_, nullptr)), size_(std::exchange(o.size_, 0)) {}
  mapped_file& operator=(mapped_file&& o) noexcept {
    if (this != &o) {
      unmap();
      data_ = std::exchange(o.data_, nullptr);
      size_ = std::exchange(o.size_, 0);
    }
    return *this;
  }
  mapped_file(const mapped_file&) = delete;
  mapped_file& operator=(const mapped_file&) = delete;
  ~mapped_file() { unmap(); }

  std::string_view bytes() const { return {static_cast<const char*>(data_), size_}; }

 private:
  mapped_file(void* data, std::size_t size) : data_(data), size_(size) {}
  void unmap() {
    if (data_ != nullptr) ::munmap(data_, size_);
    data_ = nullptr;
  }

  void* data_ = nullptr;
  std::size_t size_ = 0;
};

constexpr token_id llama2c_unk_id = 0;
constexpr token_id llama2c_bos_id = 1;
constexpr token_id llama2c_eos_id = 2;
constexpr token_id llama2c_byte0_id = 3;  // ids 3..258 are the byte pieces <0x00>..<0xFF>
// run.c starts its best-merge search at -1e10, so a merge scoring at or below that never happens.
constexpr float llama2c_min_merge_score = -1e10f;

// Reads a native-endian 32-bit value at `offset`; the caller has checked the bounds.
template <class T>
T read_at(std::string_view data, std::size_t offset) {
  static_assert(sizeof(T) == 4);
  T v;
  std::memcpy(&v, data.data() + offset, sizeof(T));
  return v;
}

template <class T>
std::string str(T v) {
  return std::to_string(v);
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

class llama2c_tokenizer final : public tokenizer {
 public:
  using storage = std::variant<mapped_file, std::string>;

  // Validates and indexes `bytes`, which keep living in `store`; `name` is only for messages.
  static std::expected<std::unique_ptr<tokenizer>, std::string> create(storage store, std::string_view name,
                                                                       int vocab_size) {
    // Heap first, then parse: the views into the data must not move with the object.
    auto tok = std::unique_ptr<llama2c_tokenizer>(new llama2c_tokenizer(std::move(store)));
    if (auto ok = tok->parse(vocab_size); !ok) {
      return std::unexpected("tokenizer " + std::string{name} + ": " + ok.error());
    }
    return tok;
  }

  std::vector<token_id> encode(std::string_view text, bool add_bos) const override;
  std::string decode_piece(token_id prev, token_id id) const override;
  int vocab_size() const override { return static_cast<int>(pieces_.size()); }
  token_id bos_id() const override { return llama2c_bos_id; }
  token_id eos_id() const override { return llama2c_eos_id; }

 private:
  explicit llama2c_tokenizer(storage store) : store_(std::move(store)) {}

  std::string_view data() const {
    if (const auto* m = std::get_if<mapped_file>(&store_)) return m->bytes();
    return std::get<std::string>(store_);
  }
  std::expected<void, std::string> parse(int vocab_size);
  token_id lookup(std::string_view piece) const {
    const auto it = ids_.find(piece);
    return it == ids_.end() ? -1 : it->second;
  }
  token_id byte_token(unsigned char byte) const {
    const token_id id = llama2c_byte0_id + byte;
    return id < vocab_size() ? id : llama2c_unk_id;
  }
  void append_text_tokens(std::string_view text, std::vector<token_id>& out) const;
  void merge(std::vector<token_id>& ids) const;

  storage store_;
  std::vector<std::string_view> pieces_;  // [vocab_size], views into data()
  std::vector<float> scores_;             // [vocab_size], merge priority (higher merges first)
  std::unordered_map<std::string_view, token_id> ids_;  // piece -> first id with that piece
  std::size_t max_piece_len_ = 0;  // longest piece in bytes: longer concatenations need no lookup
};

std::expected<void, std::string> llama2c_tokenizer::parse(int vocab_size) {
  const std::string_view d = data();
  if (vocab_size < 3) {
    return std::unexpected("vocab_size " + str(vocab_size) + " is too small (need at least <unk>, <s>, </s>)");
  }
  if (d.size() < 4) {
    return std::unexpected("truncated: " + str(d.size()) + " bytes, too short for the max_token_length header");
  }
  const auto max_token_length = read_at<std::int32_t>(d, 0);
  if (max_token_length < 0) return std::unexpected("negative max_token_length " + str(max_token_length));

  // Never trust vocab_size for allocation: a token needs at least 8 bytes.
  const auto n_reserve = std::min<std::size_t>(static_cast<std::size_t>(vocab_size), d.size() / 8);
  pieces_.reserve(n_reserve);
  scores_.reserve(n_reserve);
  ids_.reserve(n_reserve);
  std::size_t offset = 4;
  for (int i = 0; i < vocab_size; ++i) {
    if (d.size() - offset < 8) {
      return std::unexpected("truncated: expected " + str(vocab_size) + " tokens but the file ends inside token " +
                             str(i) + " (offset " + str(offset) + ", file size " + str(d.size()) + ")");
    }
    const auto score = read_at<float>(d, offset);
    const auto len = read_at<std::int32_t>(d, offset + 4);
    offset += 8;
    if (len < 0) return std::unexpected("token " + str(i) + " has negative length " + str(len));
    if (len > max_token_length) {
      return std::unexpected("token " + str(i) + " has length " + str(len) + ", more than max_token_length " +
                             str(max_token_length));
    }
    if (d.size() - offset < static_cast<std::size_t>(len)) {
      return std::unexpected("truncated: token " + str(i) + " of " + str(vocab_size) + " needs " + str(len) +
                             " bytes at offset " + str(offset) + " but only " + str(d.size() - offset) + " remain");
    }
    const std::string_view piece = d.substr(offset, static_cast<std::size_t>(len));
    offset += static_cast<std::size_t>(len);
    pieces_.push_back(piece);
    scores_.push_back(score);
    ids_.emplace(piece, i);  // keeps the first id of a duplicated piece
    max_piece_len_ = std::max(max_piece_len_, piece.size());
  }
  return {};
}

// run.c's first pass: the text split into UTF-8 characters (a lead byte and up to 3 following
// continuation bytes, without further validation), each one its vocabulary piece if there is one,
// else one byte token per byte. Invalid UTF-8 thus always ends up as byte tokens.
void llama2c_tokenizer::append_text_tokens(std::string_view text, std::vector<token_id>& out) const {
  const auto is_continuation = [](char c) { return (static_cast<unsigned char>(c) & 0xC0) == 0x80; };
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t n = 1;
    while (n < 4 && i + n < text.size() && is_continuation(text[i + n])) ++n;
    const std::string_view ch = text.substr(i, n);
    if (const token_id id = lookup(ch); id >= 0) {
      out.push_back(id);
    } else {
      for (const char c : ch) out.push_back(byte_token(static_cast<unsigned char>(c)));
    }
    i += n;
  }
}

// Repeatedly merges the adjacent pair whose concatenation is a piece with the highest score,
// leftmost on ties. Symbols form a linked list over their starting positions; queue entries go
// stale when a neighbour merges and are skipped when popped.
void llama2c_tokenizer::merge(std::vector<token_id>& ids) const {
  if (ids.size() < 2) return;
  struct symbol {
    token_id id;
    int prev;  // index of the previous live symbol, -1 at the start
    int next;  // index of the next live symbol, -1 at the end
    bool alive;
  };
  struct candidate {
    float score;
    int left;  // symbol index; the right one is symbols[left].next when pushed
    token_id left_id, right_id, merged_id;
  };
  const auto worse = [](const candidate& a, const candidate& b) {
    if (a.score != b.score) return a.score < b.score;
    return a.left > b.left;
  };
  std::vector<symbol> syms(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    syms[i] = {ids[i], static_cast<int>(i) - 1, i + 1 < ids.size() ? static_cast<int>(i) + 1 : -1, true};
  }
  std::priority_queue<candidate, std::vector<candidate>, decltype(worse)> queue(worse);
  std::string scratch;
  scratch.reserve(2 * max_piece_len_);
  const auto try_pair = [&](int left) {
    if (left < 0 || syms[left].next < 0) return;
    const token_id a = syms[left].id, b = syms[syms[left].next].id;
    const std::string_view pa = pieces_[a], pb = pieces_[b];
    if (pa.size() + pb.size() > max_piece_len_) return;
    scratch.assign(pa).append(pb);
    const token_id merged = lookup(scratch);
    if (merged < 0 || !(scores_[merged] > llama2c_min_merge_score)) return;
    queue.push({scores_[merged], left, a, b, merged});
  };
  for (int i = 0; i + 1 < static_cast<int>(syms.size()); ++i) try_pair(i);

  while (!queue.empty()) {
    const candidate c = queue.top();
    queue.pop();
    symbol& left = syms[c.left];
    if (!left.alive || left.next < 0 || left.id != c.left_id || syms[left.next].id != c.right_id) continue;
    symbol& right = syms[left.next];
    left.id = c.merged_id;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) syms[right.next].prev = c.left;
    try_pair(left.prev);
    try_pair(c.left);
  }
  ids.clear();
  for (int i = 0; i >= 0; i = syms[i].next) ids.push_back(syms[i].id);
}

std::vector<token_id> llama2c_tokenizer::encode(std::string_view text, bool add_bos) const {
  std::vector<token_id> ids;
  ids.reserve(text.size() + 2);
  if (add_bos) ids.push_back(llama2c_bos_id);
  // SentencePiece's add_dummy_prefix, only for non-empty text as in run.c.
  if (!text.empty()) {
    const token_id space = lookup(" ");
    ids.push_back(space >= 0 ? space : byte_token(' '));
  }
  append_text_tokens(text, ids);
  merge(ids);
  return ids;
}

std::string llama2c_tokenizer::decode_piece(token_id prev, token_id id) const {
  if (id < 0 || id >= vocab_size()) return {};
  std::string_view piece = pieces_[id];
  // After BOS, SentencePiece's decoder strips the dummy-prefix space.
  if (prev == llama2c_bos_id && !piece.empty() && piece.front() == ' ') piece.remove_prefix(1);
  // "<0xXX>" stands for that one raw byte (possibly part of a UTF-8 character).
  if (piece.size() == 6 && piece.starts_with("<0x") && piece[5] == '>') {
    const int hi = hex_value(piece[3]), lo = hex_value(piece[4]);
    if (hi >= 0 && lo >= 0) return std::string(1, static_cast<char>(hi * 16 + lo));
  }
  return std::string{piece};
}

}  // namespace

std::expected<std::unique_ptr<tokenizer>, std::string> llama2c_tokenizer_load(const std::filesystem::path& path,
                                                                              int vocab_size) {
  auto file = mapped_file::open(path);
  if (!file) return std::unexpected("tokenizer " + path.string() + ": " + file.error());
  return llama2c_tokenizer::create(std::move(*file), path.string(), vocab_size);
}

std::expected<std::unique_ptr<tokenizer>, std::string> llama2c_tokenizer_from_bytes(std::string bytes,
                                                                                    int vocab_size) {
  return llama2c_tokenizer::create(std::move(bytes), "<in-memory bytes>", vocab_size);
}

}  // namespace pagedserve
