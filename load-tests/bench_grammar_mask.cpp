// The cost of constrained decoding in a batch: a decode step of 16 streams plus sampling, with and
// without a JSON-schema token mask on every row, alternating A/B in one run so the ratio is not
// skewed by other load. Two pairings: a random-weight stories110M shape with Llama 2's 32k
// SentencePiece vocabulary, and a small random model with Qwen3's 152k byte-level BPE vocabulary.
//   build/bench_grammar_mask [--benchmark_filter=qwen3]    (from the repository's root: it reads
//   tests/data/models/tokenizers/qwen3 and $PAGEDSERVE_SHARED_DIR, else ../shared, models/tokenizer.bin)
// Counters: unmasked_ms and masked_ms per step (forward + sampling), ratio = masked / unmasked.
#include <benchmark/benchmark.h>
#include <tbb/parallel_for.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "bench_decoder.hpp"
#include "model_shapes.hpp"
#include "grammar/grammar_constraint.hpp"
#include "grammar/output_format_compiler.hpp"
#include "model/model_load.hpp"
#include "pagedserve/model.hpp"
#include "tokenizer/hf_tokenizer.hpp"
#include "tokenizer/tokenizer.hpp"

namespace {

using namespace pagedserve;

constexpr int streams = 16;

// A tool-call-like schema: strings, numbers, enums and an array, the usual structured output.
constexpr const char* schema = R"({"type":"object","properties":{
  "name":{"type":"string","maxLength":40},"city":{"type":"string"},"age":{"type":"integer","minimum":0,"maximum":150},
  "score":{"type":"number"},"kind":{"enum":["person","company","other"]},
  "tags":{"type":"array","items":{"type":"string","maxLength":16},"maxItems":6}},
  "required":["name","city","age","score","kind","tags"],"additionalProperties":false})";

struct pairing {
  const char* name;
  model_config config;
  std::filesystem::path checkpoint;
  std::filesystem::path tokenizer;  // tokenizer.bin or a tokenizer.json directory
};

model_config qwen_vocab_small() {
  model_config c;
  c.dim = 512, c.hidden_dim = 1536, c.n_layers = 8, c.n_heads = 8, c.n_kv_heads = 8;
  c.vocab_size = 151936, c.seq_len = 1024, c.shared_classifier = true;
  return c;
}

std::unique_ptr<tokenizer> load_tokenizer(const pairing& p, int vocab) {
  auto tok = std::filesystem::is_directory(p.tokenizer) ? hf_tokenizer_load(p.tokenizer)
                                                        : llama2c_tokenizer_load(p.tokenizer, vocab);
  return tok ? std::move(*tok) : nullptr;
}

void bench_mask(benchmark::State& state, const pairing* p) {
  if (p->tokenizer.empty() || !std::filesystem::exists(p->tokenizer)) {
    state.SkipWithError("tokenizer absent (../shared/models)");
    return;
  }
  if (!std::filesystem::exists(p->checkpoint)) {
    std::printf("writing %s (random weights)...\n", p->checkpoint.c_str());
    if (auto r = llama2c_write_random(p->checkpoint, p->config, 1); !r) {
      state.SkipWithError(r.error().c_str());
      return;
    }
  }
  auto m = model_load_any(p->checkpoint, {});
  if (!m) {
    state.SkipWithError(m.error().c_str());
    return;
  }
  const int vocab = (*m)->config.vocab_size;
  auto tok = load_tokenizer(*p, vocab);
  if (!tok) {
    state.SkipWithError("tokenizer does not load");
    return;
  }
  auto vocabulary = std::make_shared<const grammar::token_vocabulary>(grammar::token_vocabulary_from(*tok, {tok->eos_id()}));
  auto g = grammar::compile_output_format_cached({output_format::kind::json_schema, schema, "", ""});
  if (!g) {
    state.SkipWithError(g.error().c_str());
    return;
  }
  sampling_params params;
  params.temperature = 1.0f;
  std::vector<sampler> plain;
  std::vector<std::unique_ptr<sampler>> masked(streams);
  std::uint64_t seed = 1;
  auto restart = [&](int r) {
    masked[r] = std::make_unique<sampler>(params, seed++);
    masked[r]->constrain(std::make_unique<grammar::grammar_constraint>(*g, vocabulary));
  };
  for (int r = 0; r < streams; ++r) {
    plain.emplace_back(params, seed++);
    restart(r);
  }
  bench::decoder d(**m, streams);
  for (int i = 0; i < 3; ++i) d.step();
  using clock = std::chrono::steady_clock;
  double unmasked_s = 0, masked_s = 0;
  std::int64_t steps = 0;
  for (auto _ : state) {
    // A: a plain step. B: the same step with every row masked. Alternating, so load hits both.
    auto t0 = clock::now();
    float* logits = d.step();
    tbb::parallel_for(0, streams, [&](int r) { plain[r].sample(logits + static_cast<std::size_t>(r) * vocab, vocab); });
    auto t1 = clock::now();
    logits = d.step();
    std::vector<token_id> chosen(streams);
    tbb::parallel_for(0, streams, [&](int r) { chosen[r] = masked[r]->sample(logits + static_cast<std::size_t>(r) * vocab, vocab); });
    auto t2 = clock::now();
    for (int r = 0; r < streams; ++r)
      if (chosen[r] == tok->eos_id()) restart(r);
    unmasked_s += std::chrono::duration<double>(t1 - t0).count();
    masked_s += std::chrono::duration<double>(t2 - t1).count();
    ++steps;
  }
  state.counters["unmasked_ms"] = unmasked_s * 1e3 / steps;
  state.counters["masked_ms"] = masked_s * 1e3 / steps;
  state.counters["ratio"] = masked_s / unmasked_s;
}

}  // namespace

int main(int argc, char** argv) {
  const char* shared = std::getenv("PAGEDSERVE_SHARED_DIR");
  static const pairing llama2{"s110m_llama2_32k", bench::s110m(), "/tmp/s110m.bin",
                              std::filesystem::path(shared ? shared : "../shared") / "models/tokenizer.bin"};
  static const pairing qwen3{"small_qwen3_152k", qwen_vocab_small(), "/tmp/pagedserve_qwen_vocab_small.bin",
                             "tests/data/models/tokenizers/qwen3"};
  for (const pairing* p : {&llama2, &qwen3})
    benchmark::RegisterBenchmark(("grammar_mask/" + std::string(p->name) + "/streams:16").c_str(), bench_mask, p)
        ->UseRealTime()
        ->Unit(benchmark::kMillisecond)
        ->Iterations(200);
  benchmark::Initialize(&argc, argv);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
}
