#pragma once
// What the network edge may ask of the engine, in vocabulary types only: submit a generation and
// cancel it, read the engine's figures, the tokenizer and the model's card. The engine's actors,
// the model weights, executors and kernels stay behind it (actors/engine.hpp implements it), so a
// session never builds a request actor or sees a weight.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "pagedserve/client_link.hpp"
#include "pagedserve/engine_error.hpp"
#include "pagedserve/engine_status.hpp"
#include "pagedserve/generate_command.hpp"
#include "metrics/metrics.hpp"
#include "pagedserve/sampling.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

// One submitted generation, as its connection holds it.
class generation_handle {
 public:
  virtual ~generation_handle() = default;
  // The client cancelled or went away (no error: it ends with finish_reason cancelled), or the server
  // ends it with `why` (client_too_slow). Its link still gets exactly one final event. Any thread.
  virtual void cancel(std::optional<engine_failure> why = std::nullopt) = 0;
};

// The served model as clients see it.
struct engine_model_card {
  std::string name;          // the model file's name (the API's default model id)
  int max_sequence_tokens = 0;  // prompt plus generated tokens one sequence may hold
};

class engine_api {
 public:
  virtual ~engine_api() = default;
  // Starts a generation whose events go to `link` (which the engine holds until the final event).
  // A request still running after `timeout` (0: none) ends with engine_error::request_timeout.
  virtual std::shared_ptr<generation_handle> submit(generate_command command, std::shared_ptr<client_link> link,
                                                    std::chrono::seconds timeout) = 0;
  // A key no other sample group has: the n samples of one prompt share it (generate_command::group).
  virtual std::uint64_t new_sample_group_key() = 0;
  // Ends every request in flight with `why` and refuses later ones with it (graceful shutdown).
  virtual void end_all(engine_failure why) = 0;
  // The engine's figures; `done` runs once, on an arbitrary strand (post it back to yours).
  virtual void report_status(std::function<void(engine_status)> done) = 0;
  // Serving metrics (GET /metrics): request actors record into it from any strand.
  virtual serving_metrics& metrics() = 0;
  virtual const tokenizer& vocabulary() const = 0;
  virtual engine_model_card model_card() const = 0;
  // The sampling parameters a request starts from before its own fields are read.
  virtual const sampling_params& request_defaults() const = 0;
};

}  // namespace pagedserve
