#include "cli_options.hpp"

#include <limits>

namespace pagedserve {
namespace {

constexpr const char* footer =
    "--model takes a llama2.c .bin checkpoint, a GGUF file, a Hugging Face folder (config.json + *.safetensors),\n"
    "or a Hugging Face hub repo id (org/name, or org/name:Q4_K_M for one GGUF quantization), downloaded into the\n"
    "Hugging Face cache (HF_HOME, HF_HUB_CACHE, HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE as huggingface_hub reads them).\n"
    "Without --model the server serves the built-in random-weight demo model (see README).";

// Defined before every other flag: CLI11 runs option callbacks in the order options were added, so
// the file is loaded first and the flags then override it, wherever --config stands on the line.
void add_config_flag(CLI::App& sub, config& c) {
  sub.add_option_function<std::string>(
         "--config",
         [&c](const std::string& path) {
           auto loaded = config_load(path);
           if (!loaded) cli_throw_if_any(loaded.error());
           c = *loaded;
         },
         "JSON config file (config/default.json lists every key); the other flags override it")
      ->type_name("FILE");
}

void add_model_flags(CLI::App& sub, model_paths& m) {
  sub.add_option("--model", m.model, "model: a .bin, GGUF, Hugging Face folder or hub repo id (see below)")
      ->type_name("PATH|ORG/NAME[:TAG]")
      ->group("Model");
  sub.add_option("--revision", m.revision, "hub revision (branch, tag or commit) of a repo id --model")
      ->type_name("REV")
      ->group("Model");
  sub.add_option("--tokenizer", m.tokenizer, "llama2.c tokenizer .bin (other formats carry their own)")
      ->type_name("PATH")
      ->group("Model");
  sub.add_option("--quantize", m.quantize, "weight format after loading (none = as stored)")
      ->type_name("none|f32|bf16|int8|int4")
      ->group("Model");
}

void add_compute_flags(CLI::App& sub, config& c) {
  sub.add_option("--threads", c.engine.threads, "kernel threads (TBB arena); 0 = all cores")->type_name("N")->group("Engine");
  sub.add_option("--kernels", c.engine.kernels, "force a kernel variant")
      ->type_name("auto|scalar|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16")
      ->group("Engine");
  sub.add_option("--kv-cache-dtype", c.engine.kv_cache_dtype,
                 "KV cache element type (f16: half the memory; q8: int8 with a scale per token and head)")
      ->type_name("f32|f16|q8")
      ->group("Engine");
  sub.add_option("--log-level", c.log_level, "spdlog level of the log on stderr")->type_name("trace|debug|info|warn|error");
}

void add_scheduler_flags(CLI::App& sub, engine_config& e) {
  const auto add = [&sub](const std::string& name, auto& field, const std::string& description) {
    return sub.add_option(name, field, description)->group("Engine");
  };
  add("--kv-blocks", e.kv_blocks, "KV pool size in blocks, allocated once")->type_name("N");
  add("--block-size", e.block_size, "tokens per KV block")->type_name("N");
  add("--max-num-seqs", e.max_num_seqs, "sequences per engine step")->type_name("N");
  add("--max-num-batched-tokens", e.max_num_batched_tokens, "tokens per engine step (prefill chunks + decodes)")
      ->type_name("N");
  add("--max-decode-slowdown", e.max_decode_slowdown,
      "steps with decodes take at most this many times the decodes alone (0 = no bound)")
      ->type_name("X");
  sub.add_option_function<std::string>(
         "--prefix-caching", [&e](const std::string& v) { e.prefix_caching = v == "on"; },
         "reuse the KV blocks of shared prompt prefixes")
      ->check(CLI::IsMember({"on", "off"}).description(""))
      ->type_name("on|off")
      ->default_str(e.prefix_caching ? "on" : "off")
      ->group("Engine");
  add("--generation-config", e.generation_config,
      "request sampling defaults: the model's generation_config.json (auto) or the server's (vllm)")
      ->type_name("auto|vllm");
  add("--special-tokens-in-content", e.special_tokens_in_content,
      "special-token strings in chat content: control tokens (parse) or plain text")
      ->type_name("parse|text");
  // Reasoning and tools (docs/tools-and-reasoning.md).
  add("--reasoning-parser", e.reasoning_parser,
      "chat output's reasoning: <think> when the template writes it (auto), qwen3, deepseek_r1 or none")
      ->type_name("auto|qwen3|deepseek_r1|none");
  add("--max-waiting", e.max_waiting, "queued requests before new ones are refused")->type_name("N");
  add("--max-waiting-per-client", e.max_waiting_per_client, "queued requests of one client address")->type_name("N");
}

// Speculative decoding (docs/speculative-decoding.md): vLLM's flag, a JSON object.
void add_speculative_flag(CLI::App& sub, engine_config& e) {
  sub.add_option_function<std::string>(
         "--speculative-config",
         [&e](const std::string& json) {
           std::vector<std::string> errors;
           e.speculative = speculative_config_parse(json, errors);
           cli_throw_if_any(errors);
         },
         R"(speculative decoding, e.g. '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4}')")
      ->type_name("JSON")
      ->group("Engine");
}

void add_server_flags(CLI::App& sub, server_config& s) {
  const auto add = [&sub](const std::string& name, auto& field, const std::string& description) {
    return sub.add_option(name, field, description)->group("Server");
  };
  add("--host", s.host, "address to listen on")->type_name("H");
  add("--port", s.port, "port to listen on; 0 = one the kernel picks")->type_name("P");
  add("--io-threads", s.io_threads, "network threads")->type_name("N");
  add("--api-key", s.api_key, "every route but /health and the chat page needs 'Authorization: Bearer KEY'")
      ->type_name("KEY");
  add("--allowed-hosts", s.allowed_hosts, "without an API key, Host names answered beside loopback ones ('*' = any)")
      ->type_name("H,...");
  add("--allowed-origins", s.allowed_origins, "without an API key, Origins accepted beside loopback ones ('*' = any)")
      ->type_name("O,...");
  add("--cors-allow-origin", s.cors_allow_origin, "'*' or comma-separated origins given CORS headers")->type_name("O");
  add("--served-model-name", s.served_model_name, "the model's name in the OpenAI API (default: the file's)")
      ->type_name("NAME");
  add("--replica-name", s.replica_name, "this replica's name in /health and /metrics (default HOST:PORT)")
      ->type_name("NAME");
  add("--web-root", s.web_root, "folder of the chat page served at / (default: this source tree's web/)")
      ->type_name("DIR");
  add("--max-connections", s.max_connections, "open TCP connections")->type_name("N");
  add("--max-connections-per-client", s.max_connections_per_client, "open connections of one client address")
      ->type_name("N");
  add("--max-requests-per-socket", s.max_requests_per_socket, "generate requests in flight on one WebSocket")
      ->type_name("N");
  add("--max-body-bytes", s.max_body_bytes, "HTTP request body limit")->type_name("N")->check(cli_non_negative());
  add("--max-header-bytes", s.max_header_bytes, "HTTP request line + headers limit (431 past it)")
      ->type_name("N")
      ->check(cli_non_negative());
  add("--max-outbound-bytes", s.max_outbound_bytes, "bytes queued for one WebSocket before its requests end")
      ->type_name("N")
      ->check(cli_non_negative());
  add("--idle-timeout", s.idle_timeout_seconds, "close a connection idle this long")->type_name("S");
  add("--write-timeout", s.write_timeout_seconds, "close a connection whose write is blocked this long")->type_name("S");
  add("--request-timeout", s.request_timeout_seconds, "end a generation running longer; 0 = never")->type_name("S");
  add("--shutdown-grace", s.shutdown_grace_seconds, "on SIGTERM/SIGINT, in-flight requests may finish for this long")
      ->type_name("S");
}

void add_sampling_flags(CLI::App& sub, cli_options& o) {
  sub.add_option("--prompt", o.prompt, "the text to complete")->type_name("TEXT")->group("Sampling");
  sub.add_option("--max-tokens", o.sampling.max_tokens, "tokens to generate at most (default: to the context's end)")
      ->type_name("N")
      ->check(CLI::Range(1, std::numeric_limits<int>::max()).description(""))
      ->group("Sampling");
  sub.add_option("--temperature", o.sampling.temperature, "0 = greedy")
      ->type_name("T")
      ->check(cli_non_negative())
      ->group("Sampling");
  sub.add_option("--top-p", o.sampling.top_p, "")->type_name("P")->group("Sampling");
  sub.add_option("--top-k", o.sampling.top_k, "0 = all tokens")->type_name("K")->group("Sampling");
  sub.add_option("--min-p", o.sampling.min_p, "")->type_name("P")->group("Sampling");
  sub.add_option_function<std::uint64_t>(
         "--seed", [&o](std::uint64_t seed) { o.sampling.seed = seed; }, "(default: drawn at random)")
      ->type_name("S")
      ->check(cli_non_negative())
      ->group("Sampling");
}

}  // namespace

void cli_define(CLI::App& app, cli_options& o) {
  cli_app_setup(app, footer);
  app.description("A serving runtime for LLMs on CPUs: PagedAttention, continuous batching, WebSocket and OpenAI APIs.");
  app.require_subcommand(1);
  config& c = o.settings;

  CLI::App* serve = app.add_subcommand("serve", "serve the WebSocket/HTTP API (the config and flags below)");
  add_config_flag(*serve, c);
  add_model_flags(*serve, c.model);
  add_compute_flags(*serve, c);
  add_scheduler_flags(*serve, c.engine);
  add_speculative_flag(*serve, c.engine);
  add_server_flags(*serve, c.server);
  serve->callback([&c] { cli_throw_if_any(config_validate(c)); });

  CLI::App* generate = app.add_subcommand("generate", "print one completion of --prompt on stdout (logs on stderr)");
  o.sampling.temperature = 0.0f;  // the CLI defaults to greedy, like run.c -t 0
  add_config_flag(*generate, c);
  add_model_flags(*generate, c.model);
  add_compute_flags(*generate, c);
  add_sampling_flags(*generate, o);
  generate->callback([&c] {
    std::vector<std::string> problems = config_validate(c);
    if (c.model.model.empty()) problems.push_back("generate needs --model");
    cli_throw_if_any(problems);
  });

  cli_tools_define(app, o.tool);
}

std::expected<cli_options, cli_stop> cli_parse(int argc, const char* const* argv) {
  cli_options o;
  CLI::App app("", "pagedserve");
  cli_define(app, o);
  if (auto stop = cli_app_parse(app, argc, argv)) return std::unexpected(std::move(*stop));
  o.command = app.get_subcommands().front()->get_name();
  return o;
}

}  // namespace pagedserve
