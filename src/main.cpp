// pagedserve: `serve` starts the WebSocket/HTTP server; `generate` prints one completion (the
// tools tokenize, chat-template and convert: cli_tools.hpp; every flag: cli_options.hpp). Both log
// each phase of loading the model with its duration (model/load_phase.hpp); `serve` listens first.
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>
#include <tbb/task_arena.h>

#include <boost/asio/io_context.hpp>

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <optional>
#include <random>
#include <stop_token>
#include <thread>

#include "actors/engine.hpp"
#include "cli_options.hpp"
#include "cli_tools.hpp"
#include "kv_pool_plan.hpp"
#include "share_dir.hpp"
#include "shipped_defaults.hpp"
#include "model/load_phase.hpp"
#include "model/load_progress.hpp"
#include "net/access_policy.hpp"
#include "net/graceful_shutdown.hpp"
#include "model/served_model.hpp"
#include "draft_model_load.hpp"
#include "model/generator.hpp"
#include "kv/kv_cache.hpp"
#include "net/server.hpp"

using namespace pagedserve;

namespace {

// Where the weight conversion's progress line is redrawn: stderr when it is a terminal; elsewhere
// (a pipe, a log file) only a log line every few seconds of a long conversion.
std::FILE* progress_terminal() { return ::isatty(STDERR_FILENO) ? stderr : nullptr; }

// The model, its tokenizer and chat template, each phase logged as it ends.
std::expected<served_model, std::string> load_model(const cli_options& o, load_progress& progress) {
  return served_model_load(o.settings.model, &progress);
}

const kernels::kernel_table* select_kernels(const std::string& name) {
  load_phase phase("selecting kernels");
  const kernels::kernel_table* kt = kernels::kernel_table_select(name);
  if (!kt) {
    spdlog::error("kernel variant '{}' is not supported by this CPU", name);
    return nullptr;
  }
  phase.finish(fmt::format("selected the {} kernels ({})", kernels::isa_name(kt->which),
                           name == "auto" ? "the best this CPU runs" : "forced by --kernels"));
  return kt;
}

int run_generate(const cli_options& o) {
  load_phase total("loading the model");
  const kernels::kernel_table* kt = select_kernels(o.settings.engine.kernels);
  if (!kt) return 1;
  load_progress progress(progress_terminal());
  auto loaded = load_model(o, progress);
  if (!loaded) {
    spdlog::error("{}", loaded.error());
    return 1;
  }
  const served_model& lm = *loaded;
  total.finish(fmt::format("loaded '{}'", lm.weights->name));
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

// The network threads, running from before the model loads so requests meanwhile get their 503.
class network_threads {
 public:
  network_threads(boost::asio::io_context& io, int n) : io_(io) {
    for (int i = 0; i < n; ++i) threads_.emplace_back([&io] { io.run(); });
  }
  // An early return (a load error): stop serving at once.
  ~network_threads() {
    io_.stop();
    join();
  }
  // Until the io_context stops (graceful_shutdown stops it once the connections are drained).
  void join() {
    for (auto& t : threads_)
      if (t.joinable()) t.join();
  }

 private:
  boost::asio::io_context& io_;
  std::vector<std::thread> threads_;
};

// The engine (actors and KV pool) for a loaded model, its phase logged; c.kv_blocks is filled in when
// the config left it to kv_cache_memory (kv_pool_plan.hpp).
std::expected<void, std::string> start_engine(std::optional<engine>& e, boost::asio::io_context& io,
                                              const served_model& lm, engine_config& c,
                                              std::shared_ptr<const model> draft = nullptr) {
  load_phase phase("allocating the KV pool");
  const model_config& mc = lm.weights->config;
  std::uint64_t bytes_per_token = kv_cache::bytes_per_token(mc.n_layers, mc.n_kv_heads, mc.head_size(),
                                                             kv_cache_type(c.kv_cache_dtype));
  if (draft) {  // a draft model's K/V sit in the same blocks: each block holds both (draft_proposer.hpp)
    const model_config& dc = draft->config;
    bytes_per_token += kv_cache::bytes_per_token(dc.n_layers, dc.n_kv_heads, dc.head_size(), kv_cache_type(c.kv_cache_dtype));
  }
  const int context_len = c.max_model_len > 0 ? std::min(c.max_model_len, mc.seq_len) : mc.seq_len;
  auto plan = kv_pool_plan_make(c, bytes_per_token, context_len, mem_available_bytes());
  if (!plan) return std::unexpected(plan.error());
  c.kv_blocks = plan->blocks;
  const std::uint64_t pool = bytes_per_token * static_cast<std::uint64_t>(c.kv_blocks) * c.block_size;
  spdlog::info("KV pool: {} blocks, {}, sized by {}", c.kv_blocks, bytes_text(pool), plan->why);
  e.emplace(io.get_executor(), lm.weights, lm.vocabulary, c, lm.chat, std::move(draft));
  phase.finish(fmt::format("allocated the KV pool ({} blocks of {} tokens, {}, {}) and started the engine",
                           c.kv_blocks, c.block_size, c.kv_cache_dtype, bytes_text(pool)));
  return {};
}

// Listens first, then loads: until the model is ready the server answers 503 (GET /health
// {"status":"loading"}); a signal meanwhile abandons the load and exits 0 once drained.
int run_serve(const cli_options& o) {
  config c = o.settings;
  load_phase total("loading the model");
  if (!select_kernels(c.engine.kernels)) return 1;
  boost::asio::io_context io(c.server.io_threads);
  server s(io, c.server);
  auto port = s.start();
  if (!port) {
    spdlog::error("cannot start server: {}", port.error());
    return 1;
  }
  spdlog::info("replica name '{}' (in /health and as label replica on every /metrics series)", s.replica_name());
  spdlog::info("listening on {}:{} while the model loads (GET /health answers 503 \"loading\" until it is ready)",
               c.server.host, *port);
  // A keyless server answers loopback names only (net/access_policy.hpp): say so when it listens beyond them.
  if (c.server.api_key.empty() && c.server.allowed_hosts.empty() && c.server.host != "::1" &&
      !net::is_loopback_authority(c.server.host))
    spdlog::warn("listening on {} without an API key: only requests sent to localhost, 127.0.0.1 or [::1] are "
                 "answered (403 otherwise); list the names clients use in --allowed-hosts, or set --api-key",
                 c.server.host);
  std::stop_source load_stop;
  graceful_shutdown shutdown(io, s, std::chrono::seconds(c.server.shutdown_grace_seconds), load_stop);
  std::optional<engine> e;  // outlives the network threads, which use it
  network_threads threads(io, c.server.io_threads);
  try {
    load_progress progress(progress_terminal(), load_stop.get_token());
    auto loaded = load_model(o, progress);
    if (!loaded) {
      spdlog::error("{}", loaded.error());
      return 1;
    }
    const served_model& lm = *loaded;
    progress.throw_if_cancelled();
    auto draft = draft_model_load(c, lm);
    if (!draft) {
      spdlog::error("{}", draft.error());
      return 1;
    }
    if (auto started = start_engine(e, io, lm, c.engine, *draft); !started) {
      spdlog::error("{}", started.error());
      return 1;
    }
    progress.throw_if_cancelled();
    const auto& mc = lm.weights->config;
    spdlog::info("engine: kv_blocks {} x {} tokens ({} cache), max_num_seqs {}, max_num_batched_tokens {}, weights {} ({}), kernels {}",
                 c.engine.kv_blocks, c.engine.block_size, c.engine.kv_cache_dtype, c.engine.max_num_seqs, c.engine.max_num_batched_tokens,
                 dtype_name(lm.weights->layers.empty() ? lm.weights->classifier.type : lm.weights->layers[0].wq.type),
                 c.model.quantize == "none" ? "as stored" : "quantize " + c.model.quantize,
                 kernels::isa_name(kernels::kernel_table_select(c.engine.kernels)->which));
    total.finish(fmt::format("loaded '{}' and ready to serve", lm.weights->name));
    // Ready from here on. The line clients and scripts wait for comes after it, so none of them
    // meets a 503 once it has read the line, and every line above is logged by the first 200.
    s.serve(*e);
    spdlog::info("serving '{}' (dim {}, {} layers, vocab {}, context {}) on http://{}:{} (WebSocket /v1/ws, OpenAI /v1/completions and /v1/chat/completions, GET /health, GET /metrics)",
                 lm.weights->name, mc.dim, mc.n_layers, mc.vocab_size, mc.seq_len, c.server.host, *port);
  } catch (const load_cancelled&) {
    spdlog::info("model load abandoned: exiting once the connections are drained");
  }
  threads.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  auto parsed = cli_parse(argc, argv);
  if (!parsed) return cli_stop_print(parsed.error());
  cli_options& o = *parsed;
  if (o.command != "serve" && o.command != "generate") return cli_tool_run(o.command, o.tool);
  // Logs go to stderr: `generate` keeps stdout for the completion alone.
  spdlog::set_default_logger(spdlog::stderr_color_mt("pagedserve"));
  spdlog::set_level(spdlog::level::from_str(o.settings.log_level));
  for (const std::string& note : o.notes) spdlog::warn("{}", note);
  auto which_model = shipped_defaults_apply(o.settings, o.demo_model, share_dir_find());
  if (!which_model) {
    spdlog::error("{}", which_model.error());
    return 1;
  }
  (o.demo_model ? spdlog::warn("{}", *which_model) : spdlog::info("{}", *which_model));
  return o.command == "generate" ? run_generate(o) : run_serve(o);
}
