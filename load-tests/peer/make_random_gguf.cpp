// make-random-gguf: a random-weight llama-arch GGUF of one of llama.cpp's quantization mixes
// (gguf_add_random_model: "Q4_K_M", "Q4_0", "Q8_0", "F16", "pure:q4_K", ... as gguf_recipe_parse
// reads them) with the llama2.c vocabulary embedded as a SentencePiece ("llama") tokenizer, so that
// llama.cpp and pagedserve both load the same file (quant_vs_llama_cpp.sh). Same shape arguments as
// make-random-model. Speed does not depend on the weights' values.
//   make-random-gguf s110m-Q4_K_M.gguf Q4_K_M ../shared/models/tokenizer.bin 768 2048 12 12 12 32000 1024 0 1
#include <charconv>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/gguf_random_model.hpp"

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

}  // namespace

int main(int argc, char** argv) {
  static const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len", "untied", "seed"};
  if (argc != 13) {
    std::fprintf(stderr,
                 "usage: make-random-gguf OUT TYPE TOKENIZER.bin dim hidden_dim n_layers n_heads n_kv_heads vocab_size seq_len untied seed\n"
                 "  TYPE: llama-quantize's F32 F16 BF16 Q4_0 Q4_1 Q5_0 Q5_1 Q8_0 Q2_K Q3_K Q4_K Q5_K Q6_K IQ4_NL IQ4_XS Q4_K_M Q5_K_M,\n"
                 "        or pure:<type> (every matrix one type)\n");
    return 2;
  }
  const auto recipe = gguf_recipe_parse(argv[2]);
  if (!recipe) {
    std::fprintf(stderr, "make-random-gguf: TYPE '%s' is not a llama-quantize type or mix\n", argv[2]);
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
  model_config c;
  c.architecture = "llama";
  c.dim = static_cast<int>(v[0]);
  c.hidden_dim = static_cast<int>(v[1]);
  c.n_layers = static_cast<int>(v[2]);
  c.n_heads = static_cast<int>(v[3]);
  c.n_kv_heads = static_cast<int>(v[4]);
  c.vocab_size = static_cast<int>(v[5]);
  c.seq_len = static_cast<int>(v[6]);
  c.shared_classifier = v[7] == 0;
  if (c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 || c.dim % 32 != 0 || c.hidden_dim % 32 != 0) {
    std::fprintf(stderr, "make-random-gguf: need dim %% n_heads == 0, n_heads %% n_kv_heads == 0, dim and hidden_dim multiples of 32\n");
    return 2;
  }
  vocab voc;
  if (!vocab_read(argv[3], c.vocab_size, voc)) {
    std::fprintf(stderr, "make-random-gguf: cannot read %d tokens from %s\n", c.vocab_size, argv[3]);
    return 1;
  }
  gguf_writer g;
  gguf_add_random_model(g, c, *recipe, static_cast<std::uint64_t>(v[8]));
  g.add_u32("llama.rope.dimension_count", static_cast<std::uint32_t>(c.head_size()));
  g.add_string("tokenizer.ggml.model", "llama");
  g.add_strings("tokenizer.ggml.tokens", voc.tokens);
  g.add_f32s("tokenizer.ggml.scores", voc.scores);
  g.add_i32s("tokenizer.ggml.token_type", voc.types);
  g.add_u32("tokenizer.ggml.unknown_token_id", 0);
  if (auto written = g.write(argv[1]); !written) {
    std::fprintf(stderr, "make-random-gguf: %s\n", written.error().c_str());
    return 1;
  }
  return 0;
}
