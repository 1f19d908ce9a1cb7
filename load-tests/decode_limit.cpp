// decode-limit MODEL: the decode speed a model's memory traffic allows on this machine. Loads the model
// (mapped, as stored: nothing is read), sums the bytes one token streams (every attention matrix, the
// router, n_experts_used of n_experts experts at their average size, one embedding row, the classifier),
// measures the read bandwidth in this process (membw.hpp; it drifts on a VM, so scripts run this in the
// same session as their benchmark) and prints
//   active_bytes_per_token <B>  read_bandwidth_gbps <G>  limit_tok_s <G / B>
#include <cstdio>

#include "membw.hpp"
#include "model/model_load.hpp"
#include "tools_cli.hpp"

int main(int argc, char** argv) {
  CLI::App app("", "decode-limit");
  std::string path;
  pagedserve::bench::decode_limit_define(app, path);
  if (auto stop = pagedserve::cli_app_parse(app, argc, argv)) return pagedserve::cli_stop_print(*stop);
  auto m = pagedserve::model_load_any(path);
  if (!m) {
    std::fprintf(stderr, "decode-limit: %s\n", m.error().c_str());
    return 1;
  }
  const pagedserve::model& model = **m;
  const pagedserve::model_config& c = model.config;
  double bytes = static_cast<double>(model.token_embedding.n_bytes()) / c.vocab_size + model.classifier.n_bytes();
  for (const pagedserve::layer_weights& l : model.layers) {
    for (const pagedserve::weight* w : {&l.wq, &l.wk, &l.wv, &l.wo, &l.w_gate, &l.w_up, &l.w_down, &l.router})
      bytes += static_cast<double>(w->n_bytes());
    double experts = 0;
    for (const pagedserve::expert_weights& e : l.experts) experts += static_cast<double>(e.gate.n_bytes() + e.up.n_bytes() + e.down.n_bytes());
    if (!l.experts.empty()) bytes += experts / static_cast<double>(l.experts.size()) * c.n_experts_used;
  }
  const double gbps = pagedserve::bench::read_bandwidth_gbps();
  std::printf("active_bytes_per_token %.0f read_bandwidth_gbps %.2f limit_tok_s %.2f\n", bytes, gbps, gbps * 1e9 / bytes);
  return 0;
}
