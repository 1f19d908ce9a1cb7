// make-random-model: writes a random-weight llama2.c checkpoint, the synthetic models of
// ../shared/anchors/perf.md (same argument order as its gen_llama2c), e.g.
//   make-random-model s110m.bin 768 2048 12 12 12 32000 1024 0 1
// or, with --gguf, a GGUF of random valid blocks in one of llama.cpp's mixes, with a byte-fallback
// SentencePiece vocabulary so the server can load and serve it (Qwen3-30B-A3B's shape as Q4_K_M, 17 GB,
// written as it is generated: load-tests/moe_full_size.sh):
//   make-random-model --gguf q30b.gguf qwen3moe Q4_K_M 2048 6144 48 32 4 128 151936 40960 128 8 768 1 1
// or with a llama2.c tokenizer.bin's vocabulary instead (a trailing path), so llama.cpp loads the same
// file beside pagedserve (load-tests/quant_vs_llama_cpp.sh).
#include <charconv>
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "pagedserve/gguf_random_model.hpp"
#include "pagedserve/model.hpp"

namespace {

bool to_int(std::string_view s, long long lo, long long hi, long long& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size() && out >= lo && out <= hi;
}

// <unk>, <s>, </s>, the 256 byte pieces, then "▁t<id>" words up to vocab_size, so any sampled id decodes.
void add_synthetic_tokenizer(pagedserve::gguf_writer& w, int vocab_size) {
  std::vector<std::string> tokens = {"<unk>", "<s>", "</s>"};
  std::vector<std::int32_t> types = {2, 3, 3};
  for (int b = 0; b < 256; ++b) {
    char piece[8];
    std::snprintf(piece, sizeof piece, "<0x%02X>", b);
    tokens.emplace_back(piece);
    types.push_back(6);
  }
  while (static_cast<int>(tokens.size()) < vocab_size) {
    tokens.push_back("\u2581t" + std::to_string(tokens.size()));
    types.push_back(1);
  }
  std::vector<float> scores(tokens.size());
  for (std::size_t i = 0; i < scores.size(); ++i) scores[i] = -static_cast<float>(i);
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_f32s("tokenizer.ggml.scores", scores);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
}

// llama2.c's tokenizer.bin (i32 max_token_length, then per token f32 score, i32 length, bytes) as a GGUF
// SentencePiece vocabulary of its first vocab_size tokens; false when the file has fewer.
bool add_llama2c_tokenizer(pagedserve::gguf_writer& w, const char* path, int vocab_size) {
  std::ifstream in(path, std::ios::binary);
  std::int32_t max_len = 0;
  if (!in.read(reinterpret_cast<char*>(&max_len), 4)) return false;
  std::vector<std::string> tokens;
  std::vector<float> scores;
  std::vector<std::int32_t> types;  // llama.cpp's: 1 normal, 2 unknown, 3 control, 6 byte
  for (int i = 0; i < vocab_size; ++i) {
    float score = 0;
    std::int32_t len = 0;
    if (!in.read(reinterpret_cast<char*>(&score), 4) || !in.read(reinterpret_cast<char*>(&len), 4) || len < 0 || len > 1024)
      return false;
    std::string piece(static_cast<std::size_t>(len), '\0');
    if (!in.read(piece.data(), len)) return false;
    // llama2.c's export turned SentencePiece's U+2581 into spaces; a GGUF vocabulary keeps U+2581.
    std::string spm;
    for (char ch : piece) spm += ch == ' ' ? std::string("\u2581") : std::string(1, ch);
    const bool byte = spm.size() == 6 && spm.starts_with("<0x") && spm.back() == '>';
    types.push_back(i == 0 ? 2 : (i == 1 || i == 2) ? 3 : byte ? 6 : 1);
    tokens.push_back(i == 0 ? "<unk>" : i == 1 ? "<s>" : i == 2 ? "</s>" : spm);
    scores.push_back(score);
  }
  w.add_string("tokenizer.ggml.model", "llama");
  w.add_strings("tokenizer.ggml.tokens", tokens);
  w.add_f32s("tokenizer.ggml.scores", scores);
  w.add_i32s("tokenizer.ggml.token_type", types);
  w.add_u32("tokenizer.ggml.unknown_token_id", 0);
  w.add_bool("tokenizer.ggml.add_bos_token", true);
  return true;
}

int gguf_main(int argc, char** argv) {
  static const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "head_dim", "vocab_size",
                                "seq_len", "n_experts", "n_experts_used", "expert_hidden_dim", "untied", "seed"};
  if (argc != 18 && argc != 19) {
    std::fprintf(stderr,
                 "usage: make-random-model --gguf OUT ARCH RECIPE dim hidden_dim n_layers n_heads n_kv_heads head_dim\n"
                 "                         vocab_size seq_len n_experts n_experts_used expert_hidden_dim untied seed [TOKENIZER.bin]\n"
                 "  TOKENIZER.bin: a llama2.c vocabulary to embed (default: bytes plus synthetic words)\n"
                 "  ARCH: llama, qwen3 or qwen3moe; RECIPE: Q4_K_M, Q5_K_M, Q6_K, Q4_0, Q8_0, IQ4_XS, pure:Q4_K ...\n"
                 "  e.g. (Qwen3-30B-A3B) make-random-model --gguf q30b.gguf qwen3moe Q4_K_M 2048 6144 48 32 4 128 151936 40960 128 8 768 1 1\n");
    return 2;
  }
  const auto recipe = pagedserve::gguf_recipe_parse(argv[4]);
  if (!recipe) {
    std::fprintf(stderr, "make-random-model: unknown recipe '%s'\n", argv[4]);
    return 2;
  }
  long long v[13];
  for (int i = 0; i < 13; ++i) {
    const bool zero_ok = i == 5 || (i >= 8 && i <= 12);
    if (!to_int(argv[i + 5], zero_ok ? 0 : 1, i == 12 ? (1LL << 53) : (1 << 24), v[i])) {
      std::fprintf(stderr, "make-random-model: bad %s '%s'\n", names[i], argv[i + 5]);
      return 2;
    }
  }
  pagedserve::model_config c;
  c.architecture = argv[3];
  c.dim = static_cast<int>(v[0]), c.hidden_dim = static_cast<int>(v[1]), c.n_layers = static_cast<int>(v[2]);
  c.n_heads = static_cast<int>(v[3]), c.n_kv_heads = static_cast<int>(v[4]), c.head_dim = static_cast<int>(v[5]);
  c.vocab_size = static_cast<int>(v[6]), c.seq_len = static_cast<int>(v[7]);
  c.n_experts = static_cast<int>(v[8]), c.n_experts_used = static_cast<int>(v[9]), c.expert_hidden_dim = static_cast<int>(v[10]);
  c.norm_topk_prob = true;
  c.shared_classifier = v[11] == 0;
  c.rope_theta = 1000000.0f;
  c.rms_norm_eps = 1e-6f;
  if ((c.architecture != "llama" && c.architecture != "qwen3" && c.architecture != "qwen3moe") ||
      (c.n_experts > 0) != (c.architecture == "qwen3moe") || c.n_heads % c.n_kv_heads != 0 || c.head_size() % 2 != 0 ||
      c.n_experts_used > c.n_experts || c.vocab_size < 260) {
    std::fprintf(stderr, "make-random-model: need ARCH llama/qwen3/qwen3moe (experts only for qwen3moe), n_kv_heads | n_heads, "
                         "an even head size, n_experts_used <= n_experts, vocab_size >= 260\n");
    return 2;
  }
  pagedserve::gguf_writer w;
  pagedserve::gguf_add_random_model(w, c, *recipe, static_cast<std::uint64_t>(v[12]));
  if (argc == 19) {
    if (!add_llama2c_tokenizer(w, argv[18], c.vocab_size)) {
      std::fprintf(stderr, "make-random-model: cannot read %d tokens from %s\n", c.vocab_size, argv[18]);
      return 1;
    }
  } else {
    add_synthetic_tokenizer(w, c.vocab_size);
  }
  if (auto written = w.write(argv[2]); !written) {
    std::fprintf(stderr, "make-random-model: %s\n", written.error().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "--gguf") return gguf_main(argc, argv);
  static const char* names[] = {"dim", "hidden_dim", "n_layers", "n_heads", "n_kv_heads", "vocab_size", "seq_len", "untied", "seed"};
  if (argc != 11) {
    std::fprintf(stderr,
                 "usage: make-random-model OUT dim hidden_dim n_layers n_heads n_kv_heads vocab_size seq_len untied seed\n"
                 "  untied: 1 writes a separate classifier (wcls), 0 ties it to the token embedding\n"
                 "  e.g. make-random-model s110m.bin 768 2048 12 12 12 32000 1024 0 1\n");
    return 2;
  }
  long long v[9];
  for (int i = 0; i < 9; ++i) {
    const long long hi = i == 8 ? (1LL << 53) : (i == 7 ? 1 : 1 << 24);
    if (!to_int(argv[i + 2], i == 7 || i == 8 ? 0 : 1, hi, v[i])) {
      std::fprintf(stderr, "make-random-model: bad %s '%s'\n", names[i], argv[i + 2]);
      return 2;
    }
  }
  pagedserve::model_config c;
  c.dim = static_cast<int>(v[0]);
  c.hidden_dim = static_cast<int>(v[1]);
  c.n_layers = static_cast<int>(v[2]);
  c.n_heads = static_cast<int>(v[3]);
  c.n_kv_heads = static_cast<int>(v[4]);
  c.vocab_size = static_cast<int>(v[5]);
  c.seq_len = static_cast<int>(v[6]);
  c.shared_classifier = v[7] == 0;
  if (c.dim % c.n_heads != 0 || c.n_heads % c.n_kv_heads != 0 || (c.dim / c.n_heads) % 2 != 0) {
    std::fprintf(stderr, "make-random-model: need dim %% n_heads == 0, n_heads %% n_kv_heads == 0 and an even head size\n");
    return 2;
  }
  if (auto written = pagedserve::llama2c_write_random(argv[1], c, static_cast<std::uint64_t>(v[8])); !written) {
    std::fprintf(stderr, "make-random-model: %s\n", written.error().c_str());
    return 1;
  }
  return 0;
}
