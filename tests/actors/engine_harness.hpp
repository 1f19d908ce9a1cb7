#pragma once
// Drives the real engine (scheduler, KV allocator, executor actors) and request actors in-process:
// a recorder stands in for the WebSocket session: it gives each request a client_link and parses the
// frames it is given.
#include <simdjson.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>

#include <algorithm>
#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "actors/engine.hpp"
#include "actors/request_actor.hpp"
#include "api/ws_protocol.hpp"
#include "pagedserve/model.hpp"
#include "tokenizer/tokenizer.hpp"
#include "support/test_paths.hpp"

namespace pagedserve::test {

struct recorded_request {
  std::vector<token_id> ids;
  std::string text;
  std::string finish_reason;  // from done
  std::string error_code;     // from error
  int n_final = 0;            // done + error frames: must end at exactly 1
  int completion_tokens = 0;
  int spec_accepted_tokens = 0;  // done's timings, when speculative decoding ran
  int spec_draft_tokens = 0;     // of how many proposed
};

class recording_link : public std::enable_shared_from_this<recording_link> {
 public:
  // The link of the request the client calls `id`: its events are recorded as that id's frames.
  std::shared_ptr<client_link> for_request(std::string id) {
    return std::make_shared<request_link>(shared_from_this(), std::move(id));
  }
  void record(const std::string& frame) {
    std::lock_guard lock(mutex_);
    simdjson::dom::parser parser;
    simdjson::dom::element e = parser.parse(frame);
    const std::string id{std::string_view(e["id"])};
    recorded_request& r = requests_[id];
    const std::string_view type(e["type"]);
    if (type == "token") {
      std::string_view text;  // absent from a frame of reasoning only
      if (e["text"].get(text) == simdjson::SUCCESS) r.text += text;
      for (auto v : e["token_ids"].get_array()) r.ids.push_back(static_cast<token_id>(int64_t(v)));
    } else if (type == "done") {
      ++r.n_final;
      r.finish_reason = std::string_view(e["finish_reason"]);
      r.completion_tokens = static_cast<int>(int64_t(e["usage"]["completion_tokens"]));
      int64_t accepted = 0;
      if (e["timings"]["spec_accepted_tokens"].get(accepted) == simdjson::SUCCESS)
        r.spec_accepted_tokens = static_cast<int>(accepted);
      int64_t drafted = 0;
      if (e["timings"]["spec_draft_tokens"].get(drafted) == simdjson::SUCCESS) r.spec_draft_tokens = static_cast<int>(drafted);
    } else {
      ++r.n_final;
      r.error_code = std::string_view(e["code"]);
    }
  }
  int n_ended() {
    std::lock_guard lock(mutex_);
    return n_ended_;
  }
  std::map<std::string, recorded_request> requests() {
    std::lock_guard lock(mutex_);
    return requests_;
  }

 private:
  class request_link : public client_link {
   public:
    request_link(std::shared_ptr<recording_link> rec, std::string id) : rec_(std::move(rec)), id_(std::move(id)) {}
    void send_tokens(token_event event) override { rec_->record(encode_token_frame(id_, event)); }
    void send_final(final_event e) override {
      rec_->record(e.reason ? encode_done_frame(id_, e) : encode_error_frame(id_, e.error));
      std::lock_guard lock(rec_->mutex_);
      ++rec_->n_ended_;
    }
    // Every request of one recorder is one client (fair admission, per-client quotas).
    std::uint64_t client_key() const override { return reinterpret_cast<std::uintptr_t>(rec_.get()); }

   private:
    std::shared_ptr<recording_link> rec_;
    std::string id_;
  };

  std::mutex mutex_;
  std::map<std::string, recorded_request> requests_;
  int n_ended_ = 0;
};

inline std::shared_ptr<request_actor> start_request(engine& e, std::shared_ptr<recording_link> link, std::string id,
                                                    std::string prompt, sampling_params params,
                                                    std::optional<sample_group> group = std::nullopt) {
  generate_command g;
  g.id = std::move(id);
  g.group = group;
  g.prompt = std::move(prompt);
  g.params = std::move(params);
  std::shared_ptr<client_link> request_link = link->for_request(g.id);
  auto actor = std::make_shared<request_actor>(e.executor(), e, std::move(request_link), std::move(g));
  actor->tell(start_generation{});
  return actor;
}

// Runs io until pred() holds (checked between handlers); false on timeout.
template <class Pred>
bool run_until(boost::asio::io_context& io, Pred pred, std::chrono::seconds limit = std::chrono::seconds(60)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    io.restart();
    io.run_for(std::chrono::milliseconds(5));
  }
  return true;
}

// Runs prompts as requests "r0", "r1", ... with params, `concurrent` at a time: each wave starts when
// the one before has ended. False when a wave did not end in time.
inline bool run_in_waves(boost::asio::io_context& io, engine& e, const std::shared_ptr<recording_link>& link,
                         const std::vector<std::string>& prompts, const sampling_params& params, std::size_t concurrent) {
  std::size_t started = 0;
  while (started < prompts.size()) {
    const std::size_t wave_end = std::min(prompts.size(), started + concurrent);
    for (; started < wave_end; ++started) start_request(e, link, "r" + std::to_string(started), prompts[started], params);
    if (!run_until(io, [&] { return link->n_ended() == static_cast<int>(started); })) return false;
  }
  return true;
}

inline engine_status status_of(boost::asio::io_context& io, engine& e) {
  std::optional<engine_status> s;
  std::mutex m;
  e.report_status([&](engine_status st) {
    std::lock_guard lock(m);
    s = st;
  });
  run_until(io, [&] {
    std::lock_guard lock(m);
    return s.has_value();
  });
  return *s;
}

// stories260K (tests/data) with its tokenizer: the model the engine tests run.
struct loaded_model {
  std::shared_ptr<const model> weights;
  std::shared_ptr<const tokenizer> vocabulary;
};
inline loaded_model load_stories() {
  auto m = llama2c_model_load(model_file("stories260K.bin"));
  auto t = llama2c_tokenizer_load(model_file("tok512.bin"), (*m)->config.vocab_size);
  return {std::move(*m), std::move(*t)};
}

}  // namespace pagedserve::test
