#pragma once
// Groups the frames read from /v1/ws by request id and records what the protocol forbids
// (frames after a request's done, unreadable frames) as it goes, so tests can read many
// interleaved streams and then check each one.
#include <functional>
#include <map>

#include "support/ws_client.hpp"

namespace pagedserve::e2e {

// Everything one request id received.
struct request_log {
  std::string text;  // token texts, concatenated in arrival order
  int n_token_frames = 0;
  std::int64_t n_token_ids = 0;         // token ids over all token frames
  std::vector<server_frame> dones;      // done frames: exactly one for a request that finished
  std::vector<server_frame> errors;     // error frames carrying this id
  std::vector<std::string> after_done;  // raw frames for this id that came after its first done
};

class stream_collector {
 public:
  // Records one frame as received from a socket.
  void add(const ws_frame& f) {
    if (!f.text) {
      problems.push_back("binary frame from the server");
      return;
    }
    auto parsed = parse_server_frame(f.payload);
    if (!parsed) {
      problems.push_back(parsed.error());
      return;
    }
    ++n_frames;
    if (!parsed->id) {
      if (parsed->type == "error")
        null_id_errors.push_back(*parsed);
      else
        problems.push_back("frame without an id: " + parsed->raw);
      last_error = *parsed;
      if (parsed->type == "error") ++n_errors;
      return;
    }
    request_log& log = by_id[*parsed->id];
    if (!log.dones.empty()) log.after_done.push_back(parsed->raw);
    if (parsed->type == "token") {
      log.text += parsed->text;
      ++log.n_token_frames;
      log.n_token_ids += static_cast<std::int64_t>(parsed->token_ids.size());
    } else if (parsed->type == "done") {
      log.dones.push_back(*parsed);
    } else if (parsed->type == "error") {
      log.errors.push_back(*parsed);
      last_error = *parsed;
      ++n_errors;
    } else {
      problems.push_back("unknown frame type: " + parsed->raw);
    }
  }

  bool done(const std::string& id) const {
    auto it = by_id.find(id);
    return it != by_id.end() && !it->second.dones.empty();
  }
  // Frames seen for id (an empty log when none).
  const request_log& operator[](const std::string& id) const {
    static const request_log empty;
    auto it = by_id.find(id);
    return it == by_id.end() ? empty : it->second;
  }

  std::map<std::string, request_log> by_id;
  std::vector<server_frame> null_id_errors;  // error frames whose id is null
  std::optional<server_frame> last_error;    // the newest error frame, whatever its id
  int n_errors = 0;                          // error frames so far, any id
  int n_frames = 0;                          // readable frames so far
  std::vector<std::string> problems;         // frames that break the protocol's shape
};

// One socket and the collector its frames go to.
struct ws_stream {
  ws_client* client;
  stream_collector* frames;
};

// Reads from every stream in turn until finished() holds or the timeout passes; returns
// finished(). A closed socket ends the wait early (its reason goes to that stream's problems).
inline bool read_until(const std::vector<ws_stream>& streams, const std::function<bool()>& finished,
                       std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + test::scaled(timeout);
  const auto slice = streams.size() > 1 ? std::chrono::milliseconds(10) : std::chrono::milliseconds(50);
  while (!finished()) {
    if (std::chrono::steady_clock::now() >= deadline) return false;
    for (const ws_stream& s : streams) {
      // Drain what is there, then move on to the next socket.
      while (std::chrono::steady_clock::now() < deadline) {
        auto f = s.client->read(slice);
        if (f) {
          s.frames->add(*f);
          if (finished()) return true;
          continue;
        }
        if (f.error() != "timeout") {
          s.frames->problems.push_back("socket ended: " + f.error());
          return finished();
        }
        break;
      }
    }
  }
  return true;
}

inline bool read_until(ws_client& client, stream_collector& frames, const std::function<bool()>& finished,
                       std::chrono::milliseconds timeout) {
  return read_until({{&client, &frames}}, finished, timeout);
}

// Reads until one more error frame than now arrives; returns it (nullopt on timeout).
inline std::optional<server_frame> next_error(ws_client& client, stream_collector& frames,
                                              std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
  const int before = frames.n_errors;
  if (!read_until(
          client, frames, [&] { return frames.n_errors > before; }, timeout))
    return std::nullopt;
  return frames.last_error;
}

}  // namespace pagedserve::e2e
