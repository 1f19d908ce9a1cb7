// make-random-model: writes a random-weight llama2.c checkpoint, the synthetic models of
// ../shared/anchors/perf.md (same argument order as its gen_llama2c), e.g.
//   make-random-model s110m.bin 768 2048 12 12 12 32000 1024 0 1
// or, with --gguf, a GGUF of random valid blocks in one of llama.cpp's mixes (every llama-quantize ftype
// of the k-quant, legacy and IQ4 families: gguf_recipe.hpp), with a byte-fallback
// SentencePiece vocabulary so the server can load and serve it (Qwen3-30B-A3B's shape as Q4_K_M, 17 GB,
// written as it is generated: load-tests/moe_full_size.sh):
//   make-random-model --gguf q30b.gguf qwen3moe Q4_K_M 2048 6144 48 32 4 128 151936 40960 128 8 768 1 1
// or with a llama2.c tokenizer.bin's vocabulary instead (a trailing path), so llama.cpp loads the same
// file beside pagedserve (load-tests/quant_vs_llama_cpp.sh); --splits N writes it as a split model
// (OUT = NAME-00001-of-0000N.gguf), as hub repos publish large quantizations.
#include <cstdio>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "model/gguf_random_model.hpp"
#include "model/gguf_split.hpp"
#include "pagedserve/model.hpp"
#include "tools_cli.hpp"

namespace {

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

int write_gguf(const pagedserve::bench::gguf_random_options& o) {
  pagedserve::gguf_writer w;
  pagedserve::gguf_add_random_model(w, o.config, o.recipe, o.seed);
  if (!o.tokenizer.empty()) {
    if (!add_llama2c_tokenizer(w, o.tokenizer.c_str(), o.config.vocab_size)) {
      std::fprintf(stderr, "make-random-model: cannot read %d tokens from %s\n", o.config.vocab_size, o.tokenizer.c_str());
      return 1;
    }
  } else {
    pagedserve::gguf_add_synthetic_vocab(w, o.config.vocab_size);
  }
  if (o.splits > 1) {
    if (auto first = w.write_splits(pagedserve::gguf_split_name_parse(o.out)->prefix, o.splits); !first) {
      std::fprintf(stderr, "make-random-model: %s\n", first.error().c_str());
      return 1;
    }
    return 0;
  }
  if (auto written = w.write(o.out); !written) {
    std::fprintf(stderr, "make-random-model: %s\n", written.error().c_str());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app("", "make-random-model");
  // The GGUF form's arguments differ from the first one on: --gguf, always first, picks it.
  if (argc > 1 && std::string_view(argv[1]) == "--gguf") {
    pagedserve::bench::gguf_random_options o;
    pagedserve::bench::gguf_random_define(app, o);
    if (auto stop = pagedserve::cli_app_parse(app, argc, argv)) return pagedserve::cli_stop_print(*stop);
    return write_gguf(o);
  }
  pagedserve::bench::llama2c_random_options o;
  pagedserve::bench::llama2c_random_define(app, o);
  if (auto stop = pagedserve::cli_app_parse(app, argc, argv)) return pagedserve::cli_stop_print(*stop);
  if (auto written = pagedserve::llama2c_write_random(o.out, o.config, o.seed); !written) {
    std::fprintf(stderr, "make-random-model: %s\n", written.error().c_str());
    return 1;
  }
  return 0;
}
