#pragma once
// Whether the server has a model to serve yet. The socket listens before the model loads (so
// load balancers and clients see 503 "loading" rather than a refused connection); the server and
// every session share one serving_state, and each request reads it to learn whether the engine is
// there. Set once, never unset.
#include <atomic>

namespace pagedserve {
class engine_api;
}

namespace pagedserve::net {

class serving_state {
 public:
  // Null while the model loads.
  engine_api* engine_if_ready() const { return engine_.load(std::memory_order_acquire); }
  // The model is loaded: requests from now on reach e (which outlives every session's use of it).
  void set_ready(engine_api& e) { engine_.store(&e, std::memory_order_release); }

 private:
  std::atomic<engine_api*> engine_{nullptr};
};

}  // namespace pagedserve::net
