#pragma once
// The well-behaved client of the hostile-client tests (issue 17): one greedy 32-token request over its
// own WebSocket, timed. Tests print its latency alone and beside a hostile client for the record and
// pass or fail on whether it was served in full within a generous deadline, never on the timing.
#include <chrono>
#include <iostream>
#include <string>

#include "e2e/stream_collector.hpp"

namespace pagedserve::e2e {

// Wall time in ms, or -1 if the request did not end with exactly one done frame of 32 tokens in time.
inline double well_behaved_request_ms(unsigned short port) {
  using namespace std::chrono_literals;
  ws_client client;
  if (!client.connect(port)) return -1;
  const auto start = std::chrono::steady_clock::now();
  if (!client.send_text(generate_frame("good", "Once upon a time", 32))) return -1;
  stream_collector frames;
  if (!read_until(client, frames, [&] { return frames.done("good"); }, 20s)) return -1;
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  client.close();
  return frames["good"].dones.size() == 1 && frames["good"].dones.front().completion_tokens == 32 ? ms : -1;
}

}  // namespace pagedserve::e2e
