#include "cli_options.hpp"

#include <charconv>
#include <map>

namespace pagedserve {
namespace {

template <class T>
bool parse_number(const std::string& s, T& out) {
  const char* end = s.data() + s.size();
  if constexpr (std::is_floating_point_v<T>) {
    char* stop = nullptr;
    out = static_cast<T>(std::strtod(s.c_str(), &stop));
    return !s.empty() && stop == end;
  } else {
    auto [ptr, ec] = std::from_chars(s.data(), end, out);
    return ec == std::errc{} && ptr == end;
  }
}

}  // namespace

std::string cli_usage() {
  return R"(usage:
  pagedserve serve    [--config FILE] [--model M.bin|DIR|org/name[:TAG]] [--revision REV] [--tokenizer T.bin] [--host H] [--port P]
                      [--kv-blocks N] [--block-size N] [--max-num-seqs N] [--max-num-batched-tokens N]
                      [--max-decode-slowdown X] [--prefix-caching on|off] [--kv-cache-dtype f32|f16]
                      [--threads N] [--kernels auto|scalar|avx2|avx2_vnni|avx512|avx512_vnni|avx512_bf16] [--quantize none|bf16|int8|int4]
                      [--generation-config auto|vllm] [--special-tokens-in-content parse|text] [--log-level L]
                      [--max-waiting N] [--max-body-bytes N] [--api-key KEY] [--cors-allow-origin O]
                      [--served-model-name NAME] [--max-connections N] [--max-connections-per-client N]
                      [--max-waiting-per-client N] [--max-requests-per-socket N]
                      [--max-outbound-bytes N] [--max-header-bytes N] [--idle-timeout S] [--write-timeout S]
                      [--allowed-hosts H,...] [--allowed-origins O,...]
                      [--request-timeout S] [--shutdown-grace S] [--web-root DIR] [--replica-name NAME]
  pagedserve generate [--config FILE] --model M.bin|DIR|org/name[:TAG] [--revision REV] [--tokenizer T.bin] --prompt TEXT [--max-tokens N]
                      [--temperature T] [--top-p P] [--top-k K] [--min-p P] [--seed S] [--threads N]
                      [--kernels ...] [--quantize none|bf16|int8|int4] [--kv-cache-dtype f32|f16]
  pagedserve tokenize --tokenizer PATH --text TEXT [--with-special]
  pagedserve chat-template --model DIR --messages FILE.json [--no-generation-prompt]
  pagedserve convert --model M.bin --out DIR [--dtype f32|bf16]
--model takes a llama2.c .bin checkpoint, a GGUF file, a Hugging Face folder (config.json + *.safetensors),
or a Hugging Face hub repo id (org/name, or org/name:Q4_K_M for one GGUF quantization), downloaded into the
Hugging Face cache (HF_HOME, HF_HUB_CACHE, HF_TOKEN, HF_ENDPOINT, HF_HUB_OFFLINE as huggingface_hub reads them).
Without --model the server serves the built-in random-weight demo model (see README).
)";
}

std::expected<cli_options, std::vector<std::string>> cli_parse(int argc, char** argv) {
  cli_options o;
  std::vector<std::string> errors;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    o.show_help = true;
    return o;
  }
  o.command = args[0];
  if (o.command != "serve" && o.command != "generate")
    return std::unexpected(std::vector<std::string>{"unknown command '" + o.command + "' (serve or generate)"});

  std::map<std::string, std::string> flags;
  for (std::size_t i = 1; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--help" || a == "-h") {
      o.show_help = true;
      return o;
    }
    if (a.rfind("--", 0) != 0 || i + 1 >= args.size()) {
      errors.push_back("expected --flag VALUE, got '" + a + "'");
      continue;
    }
    flags[a.substr(2)] = args[++i];
  }
  if (auto it = flags.find("config"); it != flags.end()) {
    auto loaded = config_load(it->second);
    if (!loaded) return std::unexpected(loaded.error());
    o.settings = *loaded;
    flags.erase(it);
  }
  config& c = o.settings;
  o.sampling.temperature = 0.0f;  // the CLI defaults to greedy, like run.c -t 0
  for (const auto& [name, value] : flags) {
    bool ok = true;
    if (name == "model") c.model.model = value;
    else if (name == "tokenizer") c.model.tokenizer = value;
    else if (name == "revision") c.model.revision = value;
    else if (name == "host") c.server.host = value;
    else if (name == "port") ok = parse_number(value, c.server.port);
    else if (name == "kv-blocks") ok = parse_number(value, c.engine.kv_blocks);
    else if (name == "block-size") ok = parse_number(value, c.engine.block_size);
    else if (name == "max-num-seqs") ok = parse_number(value, c.engine.max_num_seqs);
    else if (name == "max-num-batched-tokens") ok = parse_number(value, c.engine.max_num_batched_tokens);
    else if (name == "max-decode-slowdown") ok = parse_number(value, c.engine.max_decode_slowdown);
    else if (name == "prefix-caching") {
      ok = value == "on" || value == "off";
      c.engine.prefix_caching = value == "on";
    }
    else if (name == "threads") ok = parse_number(value, c.engine.threads);
    else if (name == "kernels") c.engine.kernels = value;
    else if (name == "kv-cache-dtype") c.engine.kv_cache_dtype = value;
    else if (name == "generation-config") c.engine.generation_config = value;
    else if (name == "special-tokens-in-content") c.engine.special_tokens_in_content = value;
    else if (name == "quantize") c.model.quantize = value;
    else if (name == "log-level") c.log_level = value;
    else if (name == "io-threads") ok = parse_number(value, c.server.io_threads);
    else if (name == "max-waiting") ok = parse_number(value, c.engine.max_waiting);
    else if (name == "max-waiting-per-client") ok = parse_number(value, c.engine.max_waiting_per_client);
    else if (name == "max-connections-per-client") ok = parse_number(value, c.server.max_connections_per_client);
    else if (name == "max-body-bytes") ok = parse_number(value, c.server.max_body_bytes);
    else if (name == "api-key") c.server.api_key = value;
    else if (name == "cors-allow-origin") c.server.cors_allow_origin = value;
    else if (name == "served-model-name") c.server.served_model_name = value;
    else if (name == "max-connections") ok = parse_number(value, c.server.max_connections);
    else if (name == "max-requests-per-socket") ok = parse_number(value, c.server.max_requests_per_socket);
    else if (name == "max-outbound-bytes") ok = parse_number(value, c.server.max_outbound_bytes);
    else if (name == "max-header-bytes") ok = parse_number(value, c.server.max_header_bytes);
    else if (name == "idle-timeout") ok = parse_number(value, c.server.idle_timeout_seconds);
    else if (name == "write-timeout") ok = parse_number(value, c.server.write_timeout_seconds);
    else if (name == "allowed-hosts") c.server.allowed_hosts = value;
    else if (name == "allowed-origins") c.server.allowed_origins = value;
    else if (name == "request-timeout") ok = parse_number(value, c.server.request_timeout_seconds);
    else if (name == "shutdown-grace") ok = parse_number(value, c.server.shutdown_grace_seconds);
    else if (name == "web-root") c.server.web_root = value;
    else if (name == "replica-name") c.server.replica_name = value;
    else if (o.command == "generate" && name == "prompt") o.prompt = value;
    else if (o.command == "generate" && name == "max-tokens") ok = parse_number(value, o.sampling.max_tokens) && o.sampling.max_tokens > 0;
    else if (o.command == "generate" && name == "temperature") ok = parse_number(value, o.sampling.temperature) && o.sampling.temperature >= 0;
    else if (o.command == "generate" && name == "top-p") ok = parse_number(value, o.sampling.top_p);
    else if (o.command == "generate" && name == "top-k") ok = parse_number(value, o.sampling.top_k);
    else if (o.command == "generate" && name == "min-p") ok = parse_number(value, o.sampling.min_p);
    else if (o.command == "generate" && name == "seed") {
      std::uint64_t s = 0;
      ok = parse_number(value, s);
      o.sampling.seed = s;
    } else errors.push_back("unknown flag --" + name + " for " + o.command);
    if (!ok) errors.push_back("bad value '" + value + "' for --" + name);
  }
  for (auto& e : config_validate(c)) errors.push_back(std::move(e));
  if (o.command == "generate" && c.model.model.empty()) errors.push_back("generate needs --model");
  if (!errors.empty()) return std::unexpected(errors);
  return o;
}

}  // namespace pagedserve
