#pragma once
// The one config tree: defaults written inline, loaded from config/*.json (simdjson), then CLI flags
// override, then validated once with every problem reported together. Passed around by const&.
#include <cstddef>
#include <cstdint>
#include <expected>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

namespace pagedserve {

struct server_config {
  std::string host = "127.0.0.1";
  int port = 8080;
  int io_threads = 1;                        // network threads (sessions, request/scheduler/kv actors)
  std::size_t max_frame_bytes = 1 << 20;     // a larger client frame gets a frame_too_large error
  std::size_t max_body_bytes = 1 << 20;      // HTTP request bodies
  int max_logprobs = 20;                     // alternatives per token a request may ask for (vLLM's --max-logprobs)
  std::size_t max_header_bytes = 16 << 10;   // HTTP request line + headers; larger gets 431
  int max_connections = 1024;                // open TCP connections; more are answered 503 and closed
  // Open connections from one remote address: one client can never hold every connection (503 past it).
  int max_connections_per_client = 256;
  int max_requests_per_socket = 256;         // generate requests in flight on one WebSocket
  int max_outbound_frames = 4096;            // frames queued for one slow client before its requests end
  std::size_t max_outbound_bytes = 4 << 20;  // bytes queued for one WebSocket before its requests end (client_too_slow)
  int idle_timeout_seconds = 30;             // close a connection with nothing in flight and no bytes for this long
  // A write (HTTP or WebSocket) still blocked after this long means the client stopped reading: close it
  // (WebSocket requests end with client_too_slow).
  int write_timeout_seconds = 60;
  int request_timeout_seconds = 0;           // end a generation running longer with error request_timeout; 0 = never
  int shutdown_grace_seconds = 30;           // SIGTERM/SIGINT: in-flight requests may finish for this long
  std::string api_key;                       // non-empty: every route but /health and the chat page needs "Authorization: Bearer <key>"
  std::string cors_allow_origin;             // "*" or comma-separated origins given CORS headers (and accepted); empty = none
  // Without an API key, a request's Host and (when sent) Origin must be loopback (localhost, 127.0.0.0/8,
  // [::1], any port) or listed here: comma-separated, "*" = any. Hosts match with or without a port;
  // origins are "scheme://host[:port]". Keeps web pages and DNS rebinding off a keyless local server.
  std::string allowed_hosts;
  std::string allowed_origins;
  std::string served_model_name;             // the model's name in the OpenAI API; empty = the model file's name
  std::string web_root;                      // folder of the chat page served at /; empty = none (serve fills in the installed one)
  // This replica's name among several behind a load balancer: /health reports it and every /metrics
  // series carries it as label replica="...". Empty = "<hostname>:<bound port>".
  std::string replica_name;
};

// Speculative decoding, as vLLM's --speculative-config (docs/speculative-decoding.md):
// {"method":"ngram","num_speculative_tokens":4,"prompt_lookup_max":4,"prompt_lookup_min":1}.
struct speculative_config {
  std::string method;              // "" = off; "ngram" = prompt lookup (a draft model is not built yet)
  int num_speculative_tokens = 0;  // proposals verified per sequence and step, at most
  int prompt_lookup_max = 4;       // ngram: longest suffix of the sequence looked up
  int prompt_lookup_min = 1;       // ngram: shortest
  std::string model;               // a draft model's path (refused by config_validate for now)
  // Rows (decodes + proposals) a step may hold while proposals are added; 0 = where the learnt step
  // cost says verification stops paying (the default). Set: a fixed bound (tests, benchmarks).
  int max_batch_rows = 0;
};

struct engine_config {
  // KV pool size in blocks (memory: blocks * block_size * layers * 2 * kv_dim * 4 B, 2 B for f16); 0 = sized
  // from kv_cache_memory once the model is known (src/kv_pool_plan.hpp), which serve and generate do.
  int kv_blocks = 0;
  // The pool's size in bytes when kv_blocks is 0: "auto" (a share of free RAM, kv_pool_plan.hpp) or a size
  // such as "4GiB" (KiB/MiB/GiB are powers of 1024, KB/MB/GB of 1000, a bare number is bytes).
  std::string kv_cache_memory = "auto";
  int max_model_len = 0;               // longest sequence (prompt + output) in tokens; 0 = the model's context
  std::int64_t seed = -1;              // seeds the seeds of requests that bring none; -1 = drawn at random
  int block_size = 16;                 // tokens per KV block
  int max_num_seqs = 64;               // sequences per engine step
  int max_num_batched_tokens = 512;    // tokens per engine step (prefill chunks + decodes)
  int max_waiting = 1024;              // queued requests before new ones are refused
  // Queued requests of one client (its remote address): one client can never fill the whole queue
  // (too_many_requests / HTTP 429 past it, while other clients' requests are still queued).
  int max_waiting_per_client = 256;
  // Steps carrying decodes take at most this many times as long as the decodes alone: prefill chunks
  // are cut to fit (by the learnt step cost), which bounds inter-token latency while prompts arrive.
  // 0 = only max_num_batched_tokens bounds a step.
  double max_decode_slowdown = 2.0;
  bool prefix_caching = true;          // reuse computed KV blocks of shared prompt prefixes
  // Element type of the KV cache: f32, f16 (half the memory per token, and half the bytes each
  // decode step reads through attention, its largest cost at long contexts; keys and values are
  // rounded to fp16 as they are stored, so outputs differ slightly from f32's, as llama.cpp's f16
  // cache does; still batch invariant); or q8: int8 with one fp32 scale per token and kv head (about
  // a quarter of f32's bytes, as llama.cpp's q8_0 cache; docs/roofline.md). fp8 is refused.
  std::string kv_cache_dtype = "f32";
  int threads = 0;                     // TBB arena for the kernels; 0 = all cores
  std::string kernels = "auto";        // force a kernel variant: auto, scalar, avx2, avx2_vnni, avx512, avx512_vnni, avx512_bf16
  // Sampling defaults for requests that leave them out, as vLLM's --generation-config: "auto" takes
  // the model's generation_config.json (temperature, top_p, top_k, min_p, repetition_penalty,
  // max_new_tokens); "vllm" uses the server's own (temperature 1, no truncation). The file's
  // eos_token_id ends generation either way.
  std::string generation_config = "auto";
  // Special-token strings (<|im_end|>, <|eot_id|>, ...) typed into a chat message's content: "parse"
  // makes them control tokens (Hugging Face's and vLLM's default, so a user can close a turn or open
  // a system one); "text" tokenizes them as the characters they are. The template's own stay special.
  std::string special_tokens_in_content = "parse";
  // How chat output's reasoning is told apart (vLLM's --reasoning-parser): "qwen3" (<think>...</think>
  // when the output or the prompt opens it), "deepseek_r1" (reasoning until </think>), "none" (all is
  // content), or "auto": qwen3 when the model's chat template writes <think>, else none.
  std::string reasoning_parser = "auto";
  speculative_config speculative;  // off unless configured
};

struct model_paths {
  std::string model;      // llama2.c .bin checkpoint; empty = the built-in demo model
  std::string tokenizer;  // llama2.c tokenizer .bin
  // Hub revision (branch, tag or commit) when `model` is a Hugging Face repo id (org/name[:TAG]) rather
  // than a local path; the repo is downloaded into the Hugging Face cache (src/hub/hub_download.hpp).
  std::string revision = "main";
  // Weight format after loading: none (as stored), f32, bf16, int8 (per-row symmetric weights and
  // per-token activations, W8A8; see quantize.hpp) or int4 (ggml q4_K blocks, model.hpp's weight_format).
  // Quantizes fp32/bf16/f16 checkpoints at load; the demo model ignores it.
  std::string quantize = "none";
  // A Jinja chat template replacing the model's: a file, or the template itself (as vLLM's --chat-template).
  std::string chat_template;
};

struct config {
  server_config server;
  engine_config engine;
  model_paths model;
  std::string log_level = "info";
};

// Reads a JSON config file over the defaults; unknown keys and wrong types are errors.
std::expected<config, std::vector<std::string>> config_load(const std::filesystem::path& path);
// Reads --speculative-config's JSON text (the keys of speculative_config; without "method": a draft
// model when "model" is given, else n-gram lookup when proposals are), appending every problem to `errors`.
speculative_config speculative_config_parse(std::string_view json, std::vector<std::string>& errors);
// Every problem with the values, empty when the config is usable.
std::vector<std::string> config_validate(const config& c);

}  // namespace pagedserve
