// decode-limit MODEL [--quantization Q] [--kv-cache-dtype T]: the decode speed a model's memory
// traffic allows on this machine. Loads the model (mapped as stored, or converted as the server's
// --quantization does: the bytes counted are the ones served), sums the bytes one token streams
// (model_step_weight_bytes of one token: every attention matrix, the router, a shared expert, n_experts_used
// of n_experts experts at their average size, the classifier; and one embedding row), measures the read bandwidth in this process (membw.hpp; it drifts
// on a VM, so scripts run this in the same session as their benchmark) and prints
//   active_bytes_per_token <B>  read_bandwidth_gbps <G>  limit_tok_s <G / B>  kv_bytes_per_position <K>
// K: the K/V one attended position adds to a step's reads (all layers), so a script's roofline at
// n streams each attending p positions is n / ((B + n * p * K) / G) tok/s.
#include <cstdio>

#include "kv/kv_cache.hpp"
#include "membw.hpp"
#include "model/model_load.hpp"
#include "tools_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app("", "decode-limit");
  pagedserve::bench::decode_limit_options o;
  pagedserve::bench::decode_limit_define(app, o);
  if (auto stop = pagedserve::cli_app_parse(app, argc, argv)) return pagedserve::cli_stop_print(*stop);
  pagedserve::model_load_options options;
  options.weights = *pagedserve::weight_format_parse(o.quantization);  // the flag's check allows only these
  auto m = pagedserve::model_load_any(o.model, options);
  if (!m) {
    std::fprintf(stderr, "decode-limit: %s\n", m.error().c_str());
    return 1;
  }
  const pagedserve::model& model = **m;
  const pagedserve::model_config& c = model.config;
  const double bytes =
      static_cast<double>(model.token_embedding.n_bytes()) / c.vocab_size + pagedserve::model_step_weight_bytes(model, 1);
  const double kv_bytes = static_cast<double>(pagedserve::kv_cache::bytes_per_token(
      c.n_layers, c.n_kv_heads, c.head_size(), pagedserve::kv_cache_type(o.kv_cache_dtype)));
  const double gbps = pagedserve::bench::read_bandwidth_gbps();
  std::printf("active_bytes_per_token %.0f read_bandwidth_gbps %.2f limit_tok_s %.2f kv_bytes_per_position %.0f\n",
              bytes, gbps, gbps * 1e9 / bytes, kv_bytes);
  return 0;
}
