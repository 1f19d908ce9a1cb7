// make-random-gguf: a random-weight llama-arch GGUF (N(0, 0.02) matrices, norms = 1) with the
// llama2.c vocabulary embedded as a SentencePiece ("llama") tokenizer, so that llama.cpp and
// pagedserve can both load the same file (quant_vs_llama_cpp.sh). Same shape arguments as
// make-random-model; TYPE is what every matrix (token_embd and output included) is stored as:
// F32, F16, BF16, Q8_0 or Q4_0 (what gguf_writer encodes). Speed does not depend on the values.
//   make-random-gguf s110m-Q4_0.gguf Q4_0 ../shared/models/tokenizer.bin 768 2048 12 12 12 32000 1024 0 1
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/gguf_writer.hpp"

namespace {

using namespace pagedserve;

bool to_int(std::string_view s, long long lo, long long hi, long long& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size() && out >= lo && out <= hi;
}

// llama2.c's tokenizer.bin: i32 max_token_length, then per token f32 score, i32 length, bytes.
struct vocab {
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;  // llama.cpp's: 1 normal, 2 unknown, 3 control, 6 byte
};

bool vocab_read(const char* path, int n, vocab& v) {
  std::ifstream in(path, std::ios::binary);
  std::int32_t max_len = 0;
  if (!in.read(reinterpret_cast<char*>(&max_len), 4)) return false;
  for (int i = 0; i < n; ++i) {
    float score = 0;
    std::int32_t len = 0;
    if (!in.read(reinterpret_cast<char*>(&score), 4) || !in.read(reinterpret_cast<char*>(&len), 4) || len < 0 || len > 1024)
      return false;
    std::string piece(static_cast<std::size_t>(len), '\0');
    if (!in.read(piece.data(), len)) return false;
    // llama2.c's export turned SentencePiece's U+2581 into spaces; a GGUF vocabulary keeps U+2581.
    std::string spm;
    for (char c : piece) spm += c == ' ' ? std::string("\xE2\x96\x81") : std::string(1, c);
    const bool byte = spm.size() == 6 && spm.rfind("<0x", 0) == 0 && spm.back() == '>';
    v.types.push_back(i == 0 ? 2 : (i == 1 || i == 2) ? 3 : byte ? 6 : 1);
    v.tokens.push_back(i == 0 ? "<unk>" : i == 1 ? "<s>" : i == 2 ? "</s>" : spm);
    v.scores.push_back(score);
  }
  return true;
}

// N(0, 0.02) values, written tensor by tensor so the fp32 model never exists whole in memory.
class random_values {
 public:
  explicit random_values(std::uint64_t seed) : rng_(seed) {}
  std::vector<float> normal(std::size_t n) {
    std::vector<float> v(n);
    std::normal_distribution<float> d(0.0f, 0.02f);
    for (float& x : v) x = d(rng_);
    return v;
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace

int main(int argc, char** argv) {
  static const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len", "untied", "seed"};
  if (argc != 13) {
    std::fprintf(stderr,
                 "usage: make-random-gguf OUT TYPE TOKENIZER.bin dim hidden_dim n_layers n_heads n_kv_heads vocab_size seq_len untied seed\n"
                 "  TYPE: F32, F16, BF16, Q8_0 or Q4_0 (every matrix)\n");
    return 2;
  }
  const std::string_view type_name = argv[2];
  gguf_tensor_type type;
  if (type_name == "F32") type = gguf_tensor_type::f32;
  else if (type_name == "F16") type = gguf_tensor_type::f16;
  else if (type_name == "BF16") type = gguf_tensor_type::bf16;
  else if (type_name == "Q8_0") type = gguf_tensor_type::q8_0;
  else if (type_name == "Q4_0") type = gguf_tensor_type::q4_0;
  else {
    std::fprintf(stderr, "make-random-gguf: TYPE '%s' is not one of F32 F16 BF16 Q8_0 Q4_0\n", argv[2]);
    return 2;
  }
  long long v[9];
  for (int i = 0; i < 9; ++i) {
    const long long hi = i == 8 ? (1LL << 53) : (i == 7 ? 1 : 1 << 24);
    if (!to_int(argv[i + 4], i == 7 || i == 8 ? 0 : 1, hi, v[i])) {
      std::fprintf(stderr, "make-random-gguf: bad %s '%s'\n", names[i], argv[i + 4]);
      return 2;
    }
  }
  const std::uint64_t dim = v[0], hidden = v[1], n_vocab = v[5];
  const int n_layers = static_cast<int>(v[2]), n_heads = static_cast<int>(v[3]), n_kv_heads = static_cast<int>(v[4]);
  if (dim % n_heads != 0 || n_heads % n_kv_heads != 0 || dim % 32 != 0 || hidden % 32 != 0) {
    std::fprintf(stderr, "make-random-gguf: need dim %% n_heads == 0, n_heads %% n_kv_heads == 0, dim and hidden_dim multiples of 32\n");
    return 2;
  }
  vocab voc;
  if (!vocab_read(argv[3], static_cast<int>(n_vocab), voc)) {
    std::fprintf(stderr, "make-random-gguf: cannot read %lld tokens from %s\n", v[5], argv[3]);
    return 1;
  }
  const std::uint64_t kv_dim = dim / n_heads * n_kv_heads;

  gguf_writer g;
  g.add_string("general.architecture", "llama");
  g.add_string("general.name", "random " + std::string(type_name));
  g.add_u32("llama.context_length", static_cast<std::uint32_t>(v[6]));
  g.add_u32("llama.embedding_length", static_cast<std::uint32_t>(dim));
  g.add_u32("llama.block_count", static_cast<std::uint32_t>(n_layers));
  g.add_u32("llama.feed_forward_length", static_cast<std::uint32_t>(hidden));
  g.add_u32("llama.attention.head_count", static_cast<std::uint32_t>(n_heads));
  g.add_u32("llama.attention.head_count_kv", static_cast<std::uint32_t>(n_kv_heads));
  g.add_u32("llama.rope.dimension_count", static_cast<std::uint32_t>(dim / n_heads));
  g.add_f32("llama.rope.freq_base", 10000.0f);
  g.add_f32("llama.attention.layer_norm_rms_epsilon", 1e-5f);
  g.add_string("tokenizer.ggml.model", "llama");
  g.add_strings("tokenizer.ggml.tokens", voc.tokens);
  g.add_f32s("tokenizer.ggml.scores", voc.scores);
  g.add_i32s("tokenizer.ggml.token_type", voc.types);
  g.add_u32("tokenizer.ggml.unknown_token_id", 0);
  g.add_u32("tokenizer.ggml.bos_token_id", 1);
  g.add_u32("tokenizer.ggml.eos_token_id", 2);

  random_values rnd(static_cast<std::uint64_t>(v[8]));
  const std::vector<float> ones(dim, 1.0f);
  auto matrix = [&](const std::string& name, std::uint64_t rows, std::uint64_t cols) {
    g.add_tensor(name, {cols, rows}, type, rnd.normal(rows * cols));
  };
  matrix("token_embd.weight", n_vocab, dim);
  for (int l = 0; l < n_layers; ++l) {
    const std::string at = "blk." + std::to_string(l) + ".";
    g.add_tensor(at + "attn_norm.weight", {dim}, gguf_tensor_type::f32, ones);
    matrix(at + "attn_q.weight", dim, dim);
    matrix(at + "attn_k.weight", kv_dim, dim);
    matrix(at + "attn_v.weight", kv_dim, dim);
    matrix(at + "attn_output.weight", dim, dim);
    g.add_tensor(at + "ffn_norm.weight", {dim}, gguf_tensor_type::f32, ones);
    matrix(at + "ffn_gate.weight", hidden, dim);
    matrix(at + "ffn_up.weight", hidden, dim);
    matrix(at + "ffn_down.weight", dim, hidden);
  }
  g.add_tensor("output_norm.weight", {dim}, gguf_tensor_type::f32, ones);
  if (v[7] == 1) matrix("output.weight", n_vocab, dim);
  if (auto written = g.write(argv[1]); !written) {
    std::fprintf(stderr, "make-random-gguf: %s\n", written.error().c_str());
    return 1;
  }
  return 0;
}
