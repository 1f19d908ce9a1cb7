#include <simdjson.h>

#include <algorithm>

#include "config/byte_size.hpp"
#include "pagedserve/config.hpp"

namespace pagedserve {
namespace {

using simdjson::dom::element;
using simdjson::dom::element_type;

// Reads each known key of one JSON object section into its field; collects every problem.
class section_reader {
 public:
  section_reader(simdjson::dom::object obj, std::string name, std::vector<std::string>& errors)
      : obj_(obj), name_(std::move(name)), errors_(errors) {}

  template <class T>
  section_reader& field(std::string_view key, T& out) {
    known_.emplace_back(key);
    element e;
    if (obj_[key].get(e) != simdjson::SUCCESS) return *this;
    const std::string where = name_ + "." + std::string(key);
    if constexpr (std::is_same_v<T, std::string>) {
      if (e.type() == element_type::STRING) out = std::string(std::string_view(e));
      else errors_.push_back(where + " must be a string");
    } else if constexpr (std::is_same_v<T, bool>) {
      if (e.type() == element_type::BOOL) out = bool(e);
      else errors_.push_back(where + " must be true or false");
    } else if constexpr (std::is_floating_point_v<T>) {
      if (e.is_number()) out = static_cast<T>(double(e));
      else errors_.push_back(where + " must be a number");
    } else {
      if (e.type() == element_type::INT64) out = static_cast<T>(int64_t(e));
      else if (e.type() == element_type::UINT64) out = static_cast<T>(uint64_t(e));
      else errors_.push_back(where + " must be an integer");
    }
    return *this;
  }

  // A key read by other means (an object of its own).
  section_reader& known(std::string_view key) {
    known_.emplace_back(key);
    return *this;
  }

  void reject_unknown() {
    for (auto [key, value] : obj_)
      if (std::find(known_.begin(), known_.end(), key) == known_.end())
        errors_.push_back("unknown config key " + name_ + "." + std::string(key));
  }

 private:
  simdjson::dom::object obj_;
  std::string name_;
  std::vector<std::string>& errors_;
  std::vector<std::string_view> known_;
};

}  // namespace

std::expected<config, std::vector<std::string>> config_load(const std::filesystem::path& path) {
  config c;
  std::vector<std::string> errors;
  simdjson::dom::parser parser;
  element root;
  if (parser.load(path.string()).get(root) != simdjson::SUCCESS || root.type() != element_type::OBJECT)
    return std::unexpected(std::vector<std::string>{path.string() + ": not a readable JSON object"});
  auto section = [&](std::string_view name) -> std::optional<simdjson::dom::object> {
    element e;
    if (simdjson::dom::object(root)[name].get(e) != simdjson::SUCCESS) return std::nullopt;
    if (e.type() != element_type::OBJECT) {
      errors.push_back(std::string(name) + " must be an object");
      return std::nullopt;
    }
    return simdjson::dom::object(e);
  };
  if (auto s = section("server")) {
    section_reader r(*s, "server", errors);
    r.field("host", c.server.host).field("port", c.server.port).field("io_threads", c.server.io_threads)
        .field("max_frame_bytes", c.server.max_frame_bytes).field("max_body_bytes", c.server.max_body_bytes)
        .field("max_requests_per_socket", c.server.max_requests_per_socket)
        .field("max_outbound_frames", c.server.max_outbound_frames).field("api_key", c.server.api_key)
        .field("max_header_bytes", c.server.max_header_bytes).field("max_connections", c.server.max_connections)
        .field("max_connections_per_client", c.server.max_connections_per_client)
        .field("max_outbound_bytes", c.server.max_outbound_bytes)
        .field("idle_timeout_seconds", c.server.idle_timeout_seconds)
        .field("write_timeout_seconds", c.server.write_timeout_seconds)
        .field("allowed_hosts", c.server.allowed_hosts).field("allowed_origins", c.server.allowed_origins)
        .field("request_timeout_seconds", c.server.request_timeout_seconds)
        .field("shutdown_grace_seconds", c.server.shutdown_grace_seconds)
        .field("cors_allow_origin", c.server.cors_allow_origin).field("served_model_name", c.server.served_model_name)
        .field("web_root", c.server.web_root).field("replica_name", c.server.replica_name)
        .field("max_logprobs", c.server.max_logprobs);
    r.reject_unknown();
  }
  if (auto s = section("engine")) {
    section_reader r(*s, "engine", errors);
    r.field("kv_blocks", c.engine.kv_blocks).field("kv_cache_memory", c.engine.kv_cache_memory)
        .field("max_model_len", c.engine.max_model_len).field("seed", c.engine.seed)
        .field("block_size", c.engine.block_size)
        .field("max_num_seqs", c.engine.max_num_seqs).field("max_num_batched_tokens", c.engine.max_num_batched_tokens)
        .field("max_waiting", c.engine.max_waiting)
        .field("max_waiting_per_client", c.engine.max_waiting_per_client).field("threads", c.engine.threads).field("kernels", c.engine.kernels)
        .field("max_decode_slowdown", c.engine.max_decode_slowdown)
        .field("prefix_caching", c.engine.prefix_caching).field("kv_cache_dtype", c.engine.kv_cache_dtype)
        .field("generation_config", c.engine.generation_config)
        .field("special_tokens_in_content", c.engine.special_tokens_in_content)
        .field("reasoning_parser", c.engine.reasoning_parser)
        .known("speculative_config");
    r.reject_unknown();
    element spec;
    if ((*s)["speculative_config"].get(spec) == simdjson::SUCCESS)
      c.engine.speculative = speculative_config_parse(simdjson::to_string(spec), errors);
  }
  if (auto s = section("model")) {
    section_reader r(*s, "model", errors);
    r.field("path", c.model.model).field("tokenizer", c.model.tokenizer).field("quantize", c.model.quantize)
        .field("revision", c.model.revision).field("chat_template", c.model.chat_template);
    r.reject_unknown();
  }
  element level;
  if (simdjson::dom::object(root)["log_level"].get(level) == simdjson::SUCCESS) {
    if (level.type() == element_type::STRING) c.log_level = std::string(std::string_view(level));
    else errors.push_back("log_level must be a string");
  }
  for (auto [key, value] : simdjson::dom::object(root))
    if (key != "server" && key != "engine" && key != "model" && key != "log_level")
      errors.push_back("unknown config key " + std::string(key));
  if (!errors.empty()) return std::unexpected(errors);
  return c;
}

std::vector<std::string> config_validate(const config& c) {
  std::vector<std::string> e;
  const speculative_config& spec = c.engine.speculative;
  if (!spec.method.empty()) {
    if (spec.method != "ngram" && spec.method != "draft_model")
      e.push_back("engine.speculative_config: method \"" + spec.method + "\" is not supported (\"ngram\" or \"draft_model\")");
    if (spec.method == "draft_model" && spec.model.empty())
      e.push_back("engine.speculative_config: method \"draft_model\" needs \"model\" (the draft model's path)");
    if (spec.method == "ngram" && !spec.model.empty())
      e.push_back("engine.speculative_config: \"model\" is a draft model, for method \"draft_model\", not \"ngram\"");
    if (spec.num_speculative_tokens < 1 || spec.num_speculative_tokens > 16)
      e.push_back("engine.speculative_config.num_speculative_tokens must be 1..16");
    if (spec.max_batch_rows < 0) e.push_back("engine.speculative_config.max_batch_rows must be 0 (learnt) or positive");
    if (spec.prompt_lookup_min < 1 || spec.prompt_lookup_max < spec.prompt_lookup_min)
      e.push_back("engine.speculative_config needs 1 <= prompt_lookup_min <= prompt_lookup_max");
  }
  if (c.server.port < 0 || c.server.port > 65535) e.push_back("server.port must be 0..65535");
  if (c.server.io_threads < 1 || c.server.io_threads > 64) e.push_back("server.io_threads must be 1..64");
  if (c.server.max_frame_bytes < 64) e.push_back("server.max_frame_bytes must be at least 64");
  if (c.server.max_body_bytes < 64) e.push_back("server.max_body_bytes must be at least 64");
  if (c.server.max_logprobs < 0 || c.server.max_logprobs > 1000) e.push_back("server.max_logprobs must be 0..1000");
  if (c.server.max_requests_per_socket < 1) e.push_back("server.max_requests_per_socket must be positive");
  if (c.server.max_outbound_frames < 16) e.push_back("server.max_outbound_frames must be at least 16");
  if (c.server.max_outbound_bytes < 4096) e.push_back("server.max_outbound_bytes must be at least 4096");
  if (c.server.max_header_bytes < 1024) e.push_back("server.max_header_bytes must be at least 1024");
  if (c.server.max_connections < 1) e.push_back("server.max_connections must be positive");
  if (c.server.max_connections_per_client < 1) e.push_back("server.max_connections_per_client must be positive");
  if (c.server.idle_timeout_seconds < 1) e.push_back("server.idle_timeout_seconds must be positive");
  if (c.server.write_timeout_seconds < 1) e.push_back("server.write_timeout_seconds must be positive");
  if (c.server.request_timeout_seconds < 0) e.push_back("server.request_timeout_seconds must be >= 0 (0 = no limit)");
  if (c.server.shutdown_grace_seconds < 0) e.push_back("server.shutdown_grace_seconds must be >= 0");
  if (c.server.replica_name.size() > 128 ||
      std::any_of(c.server.replica_name.begin(), c.server.replica_name.end(),
                  [](char ch) { return static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f; }))
    e.push_back("server.replica_name must be at most 128 characters without control characters");
  if (c.engine.kv_blocks < 0) e.push_back("engine.kv_blocks must be >= 0 (0 = sized by engine.kv_cache_memory)");
  if (c.engine.kv_cache_memory != "auto")
    if (auto bytes = byte_size_parse(c.engine.kv_cache_memory); !bytes)
      e.push_back("engine.kv_cache_memory: " + bytes.error());
  if (c.engine.max_model_len < 0) e.push_back("engine.max_model_len must be >= 0 (0 = the model's context)");
  if (c.engine.seed < -1) e.push_back("engine.seed must be >= 0 (or -1: drawn at random)");
  if (c.engine.block_size < 1 || c.engine.block_size > 1024) e.push_back("engine.block_size must be 1..1024");
  if (c.engine.max_num_seqs < 1) e.push_back("engine.max_num_seqs must be positive");
  if (c.engine.max_num_batched_tokens < 1) e.push_back("engine.max_num_batched_tokens must be positive");
  if (!(c.engine.max_decode_slowdown == 0 || c.engine.max_decode_slowdown >= 1))
    e.push_back("engine.max_decode_slowdown must be 0 (no bound) or at least 1");
  if (c.engine.max_waiting < 1) e.push_back("engine.max_waiting must be positive");
  if (c.engine.max_waiting_per_client < 1) e.push_back("engine.max_waiting_per_client must be positive");
  if (c.engine.generation_config != "auto" && c.engine.generation_config != "vllm")
    e.push_back("engine.generation_config must be auto or vllm (got '" + c.engine.generation_config + "')");
  if (const std::string& t = c.engine.kv_cache_dtype;  // fp8 is vLLM's name for fp8_e4m3
      t != "f32" && t != "f16" && t != "q8" && t != "fp8" && t != "fp8_e4m3" && t != "fp8_e5m2")
    e.push_back("engine.kv_cache_dtype must be f32, f16, q8, fp8, fp8_e4m3 or fp8_e5m2 (got '" + t + "')");
  if (c.engine.special_tokens_in_content != "parse" && c.engine.special_tokens_in_content != "text")
    e.push_back("engine.special_tokens_in_content must be parse or text (got '" + c.engine.special_tokens_in_content + "')");
  if (c.engine.reasoning_parser != "auto" && c.engine.reasoning_parser != "qwen3" &&
      c.engine.reasoning_parser != "deepseek_r1" && c.engine.reasoning_parser != "none")
    e.push_back("engine.reasoning_parser must be auto, qwen3, deepseek_r1 or none (got '" + c.engine.reasoning_parser + "')");
  if (c.engine.threads < 0) e.push_back("engine.threads must be >= 0");
  if (c.engine.kernels != "auto" && c.engine.kernels != "scalar" && c.engine.kernels != "avx2" &&
      c.engine.kernels != "avx2_vnni" && c.engine.kernels != "avx512" && c.engine.kernels != "avx512_vnni" &&
      c.engine.kernels != "avx512_bf16")
    e.push_back("engine.kernels must be auto, scalar, avx2, avx2_vnni, avx512, avx512_vnni or avx512_bf16");
  if (c.model.quantize != "none" && c.model.quantize != "f32" && c.model.quantize != "bf16" && c.model.quantize != "int8" &&
      c.model.quantize != "int4")
    e.push_back("model.quantize must be none, f32, bf16, int8 or int4 (got '" + c.model.quantize + "')");
  if (c.model.revision.empty()) e.push_back("model.revision must not be empty (a branch, tag or commit; default main)");
  if (c.log_level != "trace" && c.log_level != "debug" && c.log_level != "info" && c.log_level != "warn" &&
      c.log_level != "error")
    e.push_back("log_level must be trace, debug, info, warn or error");
  return e;
}

}  // namespace pagedserve
