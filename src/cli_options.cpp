#include "cli_options.hpp"

#include <algorithm>
#include <array>
#include <cctype>
#include <fstream>
#include <limits>
#include <utility>

namespace pagedserve {
namespace {

constexpr const char* footer =
    "MODEL (or -m/--model) is a llama2.c .bin checkpoint, a GGUF file, a Hugging Face folder (config.json +\n"
    "*.safetensors), or a Hugging Face hub repo id (org/name, or org/name:Q4_K_M for one GGUF quantization),\n"
    "downloaded into the Hugging Face cache (HF_HOME, HF_HUB_CACHE, HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE).\n"
    "Without one, the shipped English model stories260K is served; --demo-model serves random weights.\n"
    "Every long flag can also be set by its environment variable PAGEDSERVE_<FLAG> (shown as Env:); the\n"
    "command line wins over it, and both win over --config. vLLM's and llama-server's spellings are aliases.";

// llama-server's multi-letter short flags, which CLI11 (one letter after a single dash) cannot define:
// rewritten to their long names before parsing.
constexpr std::array<std::pair<std::string_view, std::string_view>, 2> llama_short_flags{
    {{"-np", "--parallel"}, {"-ngl", "--n-gpu-layers"}}};

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

// vLLM's --dtype names for the weights, onto what the loader can convert to.
std::expected<std::string, std::string> weight_dtype_parse(std::string_view v) {
  if (v == "auto") return "none";
  if (v == "float32" || v == "float" || v == "f32" || v == "fp32") return "f32";
  if (v == "bfloat16" || v == "bf16") return "bf16";
  if (v == "float16" || v == "half" || v == "f16" || v == "fp16")
    return std::unexpected("float16 weights are not supported on CPU; use bfloat16 (half the memory of float32)");
  return std::unexpected("'" + std::string(v) + "' is not a dtype (auto, float32, bfloat16)");
}

// --quantization/--quantize: ours (none, f32, bf16, int8, int4); vLLM's GPU methods are refused by name.
std::expected<std::string, std::string> quantization_parse(std::string_view v) {
  for (std::string_view ours : {"none", "f32", "bf16", "int8", "int4"})
    if (v == ours) return std::string(v);
  if (v == "w8a8") return "int8";
  if (v == "q4_k") return "int4";
  return std::unexpected("'" + std::string(v) +
                         "' is not a quantization this engine has: none, int8 (w8a8) or int4 (q4_k, as GGUF Q4_K); "
                         "a pre-quantized GGUF is served as stored");
}

// vLLM's and llama.cpp's spellings of the KV cache type, onto the engine's f32, f16, q8, fp8_e4m3 and
// fp8_e5m2 (vLLM's "fp8" is e4m3).
std::expected<std::string, std::string> kv_cache_dtype_parse(std::string_view v) {
  if (v == "auto" || v == "f32" || v == "fp32" || v == "float32" || v == "float") return "f32";
  if (v == "f16" || v == "fp16" || v == "float16" || v == "half") return "f16";
  if (v == "q8" || v == "q8_0" || v == "int8") return "q8";
  if (v == "fp8" || v == "fp8_e4m3") return "fp8_e4m3";
  if (v == "fp8_e5m2") return "fp8_e5m2";
  return std::unexpected("'" + std::string(v) +
                         "': the KV cache holds f32 (auto), f16 (fp16), q8 (q8_0), fp8 (fp8_e4m3) or fp8_e5m2 here; " +
                         (v.starts_with("q") ? "no other quantized KV cache is implemented" : "no such type"));
}

void add_model_flags(CLI::App& sub, model_paths& m, bool& demo_model) {
  sub.add_option("model", m.model, "the model (as vllm serve MODEL); same as --model")
      ->type_name("MODEL")
      ->group("Model");
  sub.add_option("-m,--model", m.model, "model: a .bin, GGUF, Hugging Face folder or hub repo id (see below)")
      ->type_name("PATH|ORG/NAME[:TAG]")
      ->group("Model");
  sub.add_flag("--demo-model", demo_model, "serve the built-in random-weight demo model (gibberish, for tests)")
      ->group("Model");
  sub.add_option("--revision", m.revision, "hub revision (branch, tag or commit) of a repo id --model")
      ->type_name("REV")
      ->group("Model");
  sub.add_option("--tokenizer", m.tokenizer, "llama2.c tokenizer .bin (other formats carry their own)")
      ->type_name("PATH")
      ->group("Model");
  cli_add_parsed(sub, "--quantization,--quantize", m.quantize, quantization_parse,
                 "weight format after loading (none = as stored)")
      ->type_name("none|f32|bf16|int8|int4")
      ->default_str(m.quantize)
      ->group("Model");
  cli_add_parsed(sub, "--dtype", m.quantize, weight_dtype_parse, "weights' type (vLLM): auto = as stored; same field as --quantization")
      ->type_name("auto|float32|bfloat16")
      ->group("Model");
  sub.add_option("--chat-template", m.chat_template, "a Jinja chat template replacing the model's: a file or the template text")
      ->type_name("FILE|TEMPLATE")
      ->group("Model");
}

void add_compute_flags(CLI::App& sub, config& c, std::vector<std::string>& notes) {
  sub.add_option("-t,--threads", c.engine.threads, "kernel threads (TBB arena); 0 = all cores")->type_name("N")->group("Engine");
  sub.add_option("--kernels", c.engine.kernels, "force a kernel variant")
      ->type_name("auto|scalar|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16")
      ->group("Engine");
  cli_add_parsed(sub, "--kv-cache-dtype,--cache-type-k", c.engine.kv_cache_dtype, kv_cache_dtype_parse,
                 "KV cache element type (f16/fp16: half the memory; q8/q8_0: int8 with a scale per token and head; "
                 "fp8/fp8_e4m3, fp8_e5m2: 8-bit floats, scale 1.0, as vLLM)")
      ->type_name("auto|f32|f16|fp16|q8|fp8|fp8_e4m3|fp8_e5m2")
      ->default_str(c.engine.kv_cache_dtype)
      ->group("Engine");
  sub.add_option("--max-model-len", c.engine.max_model_len,
                 "longest sequence (prompt + output) in tokens; 0 = the model's context")
      ->type_name("N")
      ->check(cli_non_negative())
      ->group("Engine");
  // GPU offload flags typed out of habit: accepted, so a llama-server or vLLM command line runs as it is.
  sub.add_option_function<std::string>(
         "--n-gpu-layers,--gpu-layers",
         [&notes](const std::string&) { notes.push_back("-ngl/--n-gpu-layers ignored: pagedserve runs on the CPU"); },
         "accepted and ignored (llama-server's -ngl): this is a CPU server")
      ->type_name("N")
      ->group("Engine");
  sub.add_option_function<std::string>(
         "--gpu-memory-utilization",
         [&notes](const std::string&) {
           notes.push_back("--gpu-memory-utilization ignored: pagedserve runs on the CPU; --kv-cache-memory sizes the KV pool");
         },
         "accepted and ignored (vLLM): size the KV pool with --kv-cache-memory")
      ->type_name("F")
      ->group("Engine");
  sub.add_option("--log-level", c.log_level, "spdlog level of the log on stderr")->type_name("trace|debug|info|warn|error");
}

void add_scheduler_flags(CLI::App& sub, engine_config& e, int& ctx_size) {
  const auto add = [&sub](const std::string& name, auto& field, const std::string& description) {
    return sub.add_option(name, field, description)->group("Engine");
  };
  add("--kv-blocks", e.kv_blocks, "KV pool size in blocks, allocated once; 0 = sized by --kv-cache-memory")->type_name("N");
  add("-c,--ctx-size", ctx_size,
      "KV pool size in tokens, shared by all sequences (llama-server's -c); 0 = sized by --kv-cache-memory")
      ->type_name("N")
      ->check(cli_non_negative());
  add("--kv-cache-memory", e.kv_cache_memory,
      "KV pool size in bytes (4GiB, 512MiB, 2GB); auto = what --max-num-seqs full contexts need, at most 1/4 of free RAM")
      ->type_name("auto|SIZE");
  add("--block-size", e.block_size, "tokens per KV block")->type_name("N");
  add("--max-num-seqs,--parallel", e.max_num_seqs, "sequences per engine step (llama-server's -np)")->type_name("N");
  add("--max-num-batched-tokens,-b,--batch-size", e.max_num_batched_tokens,
      "tokens per engine step (prefill chunks + decodes)")
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
  sub.add_flag("--enable-prefix-caching,!--no-enable-prefix-caching", e.prefix_caching,
               "vLLM's spelling of --prefix-caching on/off")
      ->group("Engine");
  sub.add_option_function<std::int64_t>(
         "--seed", [&e](std::int64_t seed) { e.seed = seed; },
         "seeds the random seeds of requests that bring none (default: drawn at random)")
      ->type_name("S")
      ->check(cli_non_negative())
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
         R"(speculative decoding, e.g. '{"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4}' or a draft model with the same tokenizer, '{"model":"draft.bin","num_speculative_tokens":4}')")
      ->type_name("JSON")
      ->group("Engine");
}

// The key in a file, its first line with the line break and surrounding blanks cut off.
std::expected<std::string, std::string> key_file_read(std::string_view path) {
  std::ifstream in{std::string(path)};
  std::string key;
  if (!in || !std::getline(in, key)) return std::unexpected("cannot read " + std::string(path));
  const auto blank = [](unsigned char ch) { return std::isspace(ch) != 0; };
  key.erase(key.begin(), std::find_if_not(key.begin(), key.end(), blank));
  key.erase(std::find_if_not(key.rbegin(), key.rend(), blank).base(), key.end());
  if (key.empty()) return std::unexpected(std::string(path) + " holds no key");
  return key;
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
  cli_add_parsed(sub, "--api-key-file", s.api_key, key_file_read, "the API key, from the first line of a file (llama-server)")
      ->type_name("FILE")
      ->group("Server");
  add("--allowed-hosts", s.allowed_hosts, "without an API key, Host names answered beside loopback ones ('*' = any)")
      ->type_name("H,...");
  add("--allowed-origins", s.allowed_origins, "without an API key, Origins accepted beside loopback ones ('*' = any)")
      ->type_name("O,...");
  add("--cors-allow-origin", s.cors_allow_origin, "'*' or comma-separated origins given CORS headers")->type_name("O");
  add("--served-model-name,-a,--alias", s.served_model_name, "the model's name in the OpenAI API (default: the file's)")
      ->type_name("NAME");
  add("--replica-name", s.replica_name, "this replica's name in /health and /metrics (default HOST:PORT)")
      ->type_name("NAME");
  add("--web-root", s.web_root, "folder of the chat page served at / (default: the installed share/pagedserve/web)")
      ->type_name("DIR");
  add("--max-connections", s.max_connections, "open TCP connections")->type_name("N");
  add("--max-connections-per-client", s.max_connections_per_client, "open connections of one client address")
      ->type_name("N");
  add("--max-requests-per-socket", s.max_requests_per_socket, "generate requests in flight on one WebSocket")
      ->type_name("N");
  add("--max-body-bytes", s.max_body_bytes, "HTTP request body limit")->type_name("N")->check(cli_non_negative());
  add("--max-logprobs", s.max_logprobs, "alternatives per token a request's logprobs/top_logprobs may ask for (vLLM)")
      ->type_name("N")
      ->check(CLI::Range(0, 1000));
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

// PAGEDSERVE_<FLAG> for every long flag of sub (--max-model-len: PAGEDSERVE_MAX_MODEL_LEN), the first
// long name of each; CLI11 reads it when the flag is absent from the command line and lists it in --help.
void add_environment_names(CLI::App& sub) {
  for (CLI::Option* opt : sub.get_options()) {
    if (opt->get_lnames().empty() || opt->get_name() == "--help") continue;
    std::string env = "PAGEDSERVE_" + opt->get_lnames().front();
    for (char& ch : env) ch = ch == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    opt->envname(env);
  }
}

}  // namespace

void cli_define(CLI::App& app, cli_options& o) {
  cli_app_setup(app, footer);
  app.description("A serving runtime for LLMs on CPUs: PagedAttention, continuous batching, WebSocket and OpenAI APIs.");
  app.require_subcommand(1);
  config& c = o.settings;

  CLI::App* serve = app.add_subcommand("serve", "serve the WebSocket/HTTP API (the config and flags below)");
  add_config_flag(*serve, c);
  add_model_flags(*serve, c.model, o.demo_model);
  add_compute_flags(*serve, c, o.notes);
  add_scheduler_flags(*serve, c.engine, o.ctx_size);
  add_speculative_flag(*serve, c.engine);
  add_server_flags(*serve, c.server);
  add_environment_names(*serve);
  serve->callback([&o, &c] {
    std::vector<std::string> problems = config_validate(c);
    if (o.ctx_size > 0 && c.engine.kv_blocks > 0) problems.push_back("-c/--ctx-size and --kv-blocks both size the KV pool: give one");
    if (o.ctx_size > 0) c.engine.kv_blocks = (o.ctx_size + c.engine.block_size - 1) / std::max(c.engine.block_size, 1);
    cli_throw_if_any(problems);
  });

  CLI::App* generate = app.add_subcommand("generate", "print one completion of --prompt on stdout (logs on stderr)");
  o.sampling.temperature = 0.0f;  // the CLI defaults to greedy, like run.c -t 0
  add_config_flag(*generate, c);
  add_model_flags(*generate, c.model, o.demo_model);
  add_compute_flags(*generate, c, o.notes);
  add_sampling_flags(*generate, o);
  add_environment_names(*generate);
  generate->callback([&c] { cli_throw_if_any(config_validate(c)); });

  cli_tools_define(app, o.tool);
}

std::expected<cli_options, cli_stop> cli_parse(int argc, const char* const* argv) {
  std::vector<std::string> args(argv, argv + argc);
  for (std::string& a : args)
    for (const auto& [short_form, long_form] : llama_short_flags)
      if (a == short_form) a = long_form;
  std::vector<const char*> rewritten;
  for (const std::string& a : args) rewritten.push_back(a.c_str());
  cli_options o;
  CLI::App app("", "pagedserve");
  cli_define(app, o);
  if (auto stop = cli_app_parse(app, argc, rewritten.data())) return std::unexpected(std::move(*stop));
  o.command = app.get_subcommands().front()->get_name();
  return o;
}

}  // namespace pagedserve
