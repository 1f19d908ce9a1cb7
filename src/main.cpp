// pagedserve: `serve` starts the WebSocket/HTTP server; `generate` prints one completion.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <tbb/task_arena.h>

#include <boost/asio/io_context.hpp>

#include <cstdio>
#include <iostream>
#include <random>
#include <thread>

#include "actors/engine.hpp"
#include "cli_options.hpp"
#include "cli_tools.hpp"
#include "net/access_policy.hpp"
#include "net/graceful_shutdown.hpp"
#include "pagedserve/served_model.hpp"
#include "pagedserve/generator.hpp"
#include "pagedserve/kv_cache.hpp"
#include "pagedserve/server.hpp"

using namespace pagedserve;

namespace {

int run_generate(const cli_options& o, const served_model& lm) {
  const kernels::kernel_table* kt = kernels::kernel_table_select(o.settings.engine.kernels);
  if (!kt) {
    spdlog::error("kernel variant '{}' is not supported by this CPU", o.settings.engine.kernels);
    return 1;
  }
  tbb::task_arena arena(o.settings.engine.threads > 0 ? o.settings.engine.threads : tbb::task_arena::automatic);
  const std::vector<token_id> prompt = lm.vocabulary->encode(o.prompt, true);
  if (static_cast<int>(prompt.size()) >= lm.weights->config.seq_len) {
    spdlog::error("prompt has {} tokens; the context holds {}", prompt.size(), lm.weights->config.seq_len);
    return 1;
  }
  const std::uint64_t seed = o.sampling.seed ? *o.sampling.seed : std::random_device{}();
  arena.execute([&] {
    const auto print = [](std::string_view text) {
      std::fwrite(text.data(), 1, text.size(), stdout);
      std::fflush(stdout);
    };
    generate_sequence(*lm.weights, *lm.vocabulary, *kt, prompt, o.sampling, seed, print, 0,
                      kv_cache_type(o.settings.engine.kv_cache_dtype));
  });
  return 0;
}

int run_serve(const cli_options& o, const served_model& lm) {
  const config& c = o.settings;
  if (!kernels::kernel_table_select(c.engine.kernels)) {
    spdlog::error("kernel variant '{}' is not supported by this CPU", c.engine.kernels);
    return 1;
  }
  boost::asio::io_context io(c.server.io_threads);
  engine e(io.get_executor(), lm.weights, lm.vocabulary, c.engine, lm.chat);
  server s(io, e, c.server);
  auto port = s.start();
  if (!port) {
    spdlog::error("cannot start server: {}", port.error());
    return 1;
  }
  const auto& mc = lm.weights->config;
  spdlog::info("replica name '{}' (in /health and as label replica on every /metrics series)", s.replica_name());
  spdlog::info("serving '{}' (dim {}, {} layers, vocab {}, context {}) on http://{}:{} (WebSocket /v1/ws, OpenAI /v1/completions and /v1/chat/completions, GET /health, GET /metrics)",
               lm.weights->name, mc.dim, mc.n_layers, mc.vocab_size, mc.seq_len, c.server.host, *port);
  spdlog::info("engine: kv_blocks {} x {} tokens ({} cache), max_num_seqs {}, max_num_batched_tokens {}, weights {} ({}), kernels {}",
               c.engine.kv_blocks, c.engine.block_size, c.engine.kv_cache_dtype, c.engine.max_num_seqs, c.engine.max_num_batched_tokens,
               dtype_name(lm.weights->layers.empty() ? lm.weights->classifier.type : lm.weights->layers[0].wq.type),
               c.model.quantize == "none" ? "as stored" : "quantize " + c.model.quantize,
               kernels::isa_name(kernels::kernel_table_select(c.engine.kernels)->which));
  // A keyless server answers loopback names only (net/access_policy.hpp): say so when it listens beyond them.
  if (c.server.api_key.empty() && c.server.allowed_hosts.empty() && c.server.host != "::1" &&
      !net::is_loopback_authority(c.server.host))
    spdlog::warn("listening on {} without an API key: only requests sent to localhost, 127.0.0.1 or [::1] are "
                 "answered (403 otherwise); list the names clients use in --allowed-hosts, or set --api-key",
                 c.server.host);
  graceful_shutdown shutdown(io, s, e, std::chrono::seconds(c.server.shutdown_grace_seconds));
  std::vector<std::thread> threads;
  for (int i = 1; i < c.server.io_threads; ++i) threads.emplace_back([&io] { io.run(); });
  io.run();
  for (auto& t : threads) t.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (auto tool_exit = cli_tool_run(argc, argv)) return *tool_exit;
  auto parsed = cli_parse(argc, argv);
  if (!parsed) {
    for (const auto& e : parsed.error()) std::fprintf(stderr, "pagedserve: %s\n", e.c_str());
    std::fprintf(stderr, "%s", cli_usage().c_str());
    return 2;
  }
  if (parsed->show_help) {
    std::printf("%s", cli_usage().c_str());
    return 0;
  }
  const cli_options& o = *parsed;
  spdlog::set_level(spdlog::level::from_str(o.settings.log_level));
  // Logs go to stderr: `generate` keeps stdout for the completion alone.
  spdlog::set_default_logger(spdlog::stderr_color_mt("pagedserve"));
  spdlog::set_level(spdlog::level::from_str(o.settings.log_level));
  auto lm = served_model_load(o.settings.model);
  if (!lm) {
    spdlog::error("{}", lm.error());
    return 1;
  }
  if (o.settings.model.model.empty())
    spdlog::warn("no model configured: serving the built-in random-weight demo model '{}' (gibberish output); "
                 "pass --model M.bin --tokenizer T.bin (or a Hugging Face folder) for a real one", lm->weights->name);
  return o.command == "generate" ? run_generate(o, *lm) : run_serve(o, *lm);
}
