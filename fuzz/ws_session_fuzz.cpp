// The WebSocket session's state machine: sequences of client frames through its decision
// (net/ws_frame_dispatch.hpp) against a model of the session's requests. The input is a list of ops:
// a text frame (any bytes), a binary frame, a frame over max_frame_bytes, a generate or cancel for one
// of a few ids (so the state is reached without the fuzzer finding JSON), a running request ending, a
// drain. Invariants: never two requests with one id nor more than max_requests_per_socket, a cancel
// only for a running id, no request started while draining, and every error frame valid JSON with a
// message of bounded size whatever the client sent (issue 17 item 4).
#include <simdjson.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <iterator>
#include <set>
#include <string>
#include <string_view>

#include "net/ws_frame_dispatch.hpp"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

class reader {
 public:
  reader(const std::uint8_t* data, std::size_t size) : p_(data), end_(data + size) {}
  bool empty() const { return p_ == end_; }
  std::uint8_t byte() { return p_ == end_ ? 0 : *p_++; }
  std::string_view bytes(std::size_t n) {
    n = std::min<std::size_t>(n, static_cast<std::size_t>(end_ - p_));
    const std::string_view out(reinterpret_cast<const char*>(p_), n);
    p_ += n;
    return out;
  }

 private:
  const std::uint8_t* p_;
  const std::uint8_t* end_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace pagedserve::net;
  pagedserve::server_config config;
  config.max_frame_bytes = 512;
  config.max_requests_per_socket = 4;
  std::set<std::string> running;
  bool draining = false;
  reader in(data, size);
  simdjson::dom::parser json;
  while (!in.empty()) {
    const std::uint8_t op = in.byte() % 7;
    std::string synthesized;
    ws_frame_in frame;
    if (op == 0 || op == 1) {  // text or binary frame of any bytes, up to 4 KB
      const std::size_t high = in.byte();
      const std::size_t n = high << 4 | (in.byte() & 15);
      frame = {op == 0, 0, in.bytes(n)};
      frame.size = frame.payload.size();
    } else if (op == 2) {  // over the limit: never parsed
      frame = {true, config.max_frame_bytes + 1 + in.byte(), {}};
    } else if (op == 3 || op == 4) {  // generate or cancel for one of 6 ids
      const std::string id = "r" + std::to_string(in.byte() % 6);
      synthesized = op == 3 ? R"({"type":"generate","id":")" + id + R"(","prompt":"p"})"
                            : R"({"type":"cancel","id":")" + id + R"("})";
      frame = {true, synthesized.size(), synthesized};
    } else if (op == 5) {  // a running request ends (done or error)
      if (!running.empty()) running.erase(std::next(running.begin(), in.byte() % running.size()));
      continue;
    } else {
      draining = true;
      continue;
    }
    const ws_session_view view{[&](const std::string& id) { return running.contains(id); }, running.size(), draining};
    ws_action action = ws_dispatch(frame, view, config, {});
    if (auto* start = std::get_if<ws_start>(&action)) {
      require(!draining && running.size() < static_cast<std::size_t>(config.max_requests_per_socket));
      require(running.insert(start->command.id).second);
    } else if (auto* cancel = std::get_if<ws_cancel>(&action)) {
      require(running.contains(cancel->id));
    } else {
      const auto& err = std::get<pagedserve::protocol_error>(action);
      require(!err.code.empty() && err.message.size() <= 256);
      const std::string out = pagedserve::encode_error_frame(err.id, err.code, err.message);
      simdjson::dom::element e;
      require(json.parse(out).get(e) == simdjson::SUCCESS);
    }
  }
  return 0;
}
