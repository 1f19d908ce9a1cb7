// Encoding text a client controls with the Llama 3 tokenizer (256 added tokens, nearly all starting
// with "<|"): 1 MB of '<', of "<|", and of an unfinished "<|reserved_special_token_" per 26 bytes,
// beside 1 MB of ordinary English as the floor. The added-token search must stay linear in the input.
//
//   ./build/load-tests/bench_tokenizer_added [tokenizer dir, default ../shared/models/tokenizers/llama3]
#include <benchmark/benchmark.h>

#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include "tokenizer/hf_tokenizer.hpp"

namespace {

using namespace pagedserve;

std::filesystem::path tokenizer_dir = "../shared/models/tokenizers/llama3";
std::unique_ptr<tokenizer> loaded;

std::string repeat_to(std::string_view unit, std::size_t bytes) {
  std::string out;
  while (out.size() + unit.size() <= bytes) out += unit;
  return out;
}

void bench_encode(benchmark::State& state, std::string text) {
  for (auto _ : state) benchmark::DoNotOptimize(loaded->encode(text, false));
  state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * text.size()));
}

}  // namespace

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (argc > 1) tokenizer_dir = argv[1];
  auto t = hf_tokenizer_load(tokenizer_dir);
  if (!t) {
    std::fprintf(stderr, "skipped: no Llama 3 tokenizer (%s)\n", t.error().c_str());
    return 0;
  }
  loaded = std::move(*t);
  constexpr std::size_t mb = 1 << 20;
  benchmark::RegisterBenchmark("english_1MB", bench_encode, repeat_to("The quick brown fox jumps over the lazy dog. ", mb));
  benchmark::RegisterBenchmark("lt_1MB", bench_encode, std::string(mb, '<'));
  benchmark::RegisterBenchmark("lt_bar_1MB", bench_encode, repeat_to("<|", mb));
  benchmark::RegisterBenchmark("unfinished_reserved_1MB", bench_encode, repeat_to("<|reserved_special_token_", mb));
  benchmark::RunSpecifiedBenchmarks();
  return 0;
}
