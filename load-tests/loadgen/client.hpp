#pragma once
// What every target client (WebSocket, OpenAI SSE) does for the runner, and the record it fills per
// request. Clients run on one single-threaded io_context; nothing here is thread-safe.
#include <boost/asio/io_context.hpp>

#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "loadgen/options.hpp"
#include "loadgen/workload.hpp"

namespace pagedserve::loadgen {

using clock_type = std::chrono::steady_clock;

// How a request ended.
enum class request_outcome {
  pending,       // still running
  completed,     // the server finished it (done frame / [DONE])
  failed,        // error frame, HTTP error, broken stream or timeout: error_kind says which
  cancelled,     // soak: we cancelled it and the server confirmed
  disconnected,  // soak: we dropped its connection on purpose
};

// What loadgen does to a request besides waiting for it (soak mode).
enum class request_action { none, cancel, disconnect };

struct request_record {
  int index = 0;
  std::string id;
  int prompt_tokens_planned = -1;  // -1 without a tokenizer
  int max_tokens = 0;
  request_action action = request_action::none;
  double action_after_s = 0;       // soak: when to act, from send
  bool action_done = false;

  clock_type::time_point sent{};   // frame/request handed to the socket
  clock_type::time_point first{};  // first chunk with content (TTFT)
  clock_type::time_point last{};   // last chunk with content (E2EL)
  clock_type::time_point ended{};  // the outcome was known
  std::vector<float> itl_ms;       // gaps between consecutive content chunks
  int n_chunks = 0;                // content chunks (WebSocket token frames, SSE chunks with choices)
  int n_token_ids = 0;             // token ids seen in WebSocket token frames
  int prompt_tokens = -1;          // server usage; -1 when not reported
  int output_tokens = -1;          // server usage; -1 when not reported
  std::string finish_reason;
  request_outcome outcome = request_outcome::pending;
  std::string error_kind;          // failed: "server_error:CODE", "http_503", "connect", "timeout", ...
  std::string error_message;

  bool sent_yet() const { return sent != clock_type::time_point{}; }
  // Records a chunk with content arriving now.
  void content_chunk(clock_type::time_point now) {
    if (n_chunks == 0) first = now;
    else itl_ms.push_back(std::chrono::duration<float, std::milli>(now - last).count());
    last = now;
    ++n_chunks;
  }
  // Output tokens as vllm bench serve counts them: the server's usage, else what we saw.
  int output_tokens_counted() const {
    if (output_tokens >= 0) return output_tokens;
    return n_token_ids > 0 ? n_token_ids : n_chunks;
  }
};

// Called once per request when its outcome is known (the client set it on the record).
using end_handler = std::function<void(request_record&)>;

class target_client {
 public:
  virtual ~target_client() = default;
  // Opens n connections ahead of the level (WebSocket; a no-op for SSE, which connects per
  // request); ready is called once with an empty string when all are open, or an error.
  virtual void open(int n_connections, std::function<void(std::string)> ready) = 0;
  // Sends the request; the client sets rec.sent and later calls the end handler.
  virtual void start(request_record& rec, const request_spec& spec) = 0;
  // Asks the server to stop it (WebSocket cancel frame; SSE can only close the connection).
  virtual void cancel(request_record& rec) = 0;
  // Drops the connection that carries it, without a word (other requests on it go too).
  virtual void disconnect(request_record& rec) = 0;
  // Stops tracking it (the runner timed it out): no end handler call for it after this.
  virtual void abandon(request_record& rec) = 0;
  // Closes every connection; requests still tracked end as failed "closed".
  virtual void close() = 0;
};

std::unique_ptr<target_client> ws_client_make(boost::asio::io_context& io, const options& o, end_handler on_end);
std::unique_ptr<target_client> sse_client_make(boost::asio::io_context& io, const options& o, end_handler on_end);

// Marks rec ended with outcome (once; later calls are ignored) and reports it.
inline void record_end(request_record& rec, request_outcome outcome, const end_handler& on_end,
                       std::string kind = {}, std::string message = {}) {
  if (rec.outcome != request_outcome::pending) return;
  rec.outcome = outcome;
  rec.ended = clock_type::now();
  rec.error_kind = std::move(kind);
  rec.error_message = std::move(message);
  on_end(rec);
}

}  // namespace pagedserve::loadgen
