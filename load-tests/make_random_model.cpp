// make-random-model: writes a random-weight llama2.c checkpoint, the synthetic models of
// ../shared/anchors/perf.md (same argument order as its gen_llama2c), e.g.
//   make-random-model s110m.bin 768 2048 12 12 12 32000 1024 0 1
#include <charconv>
#include <cstdio>
#include <string_view>

#include "pagedserve/model.hpp"

namespace {

bool to_int(std::string_view s, long long lo, long long hi, long long& out) {
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc{} && p == s.data() + s.size() && out >= lo && out <= hi;
}

}  // namespace

int main(int argc, char** argv) {
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
