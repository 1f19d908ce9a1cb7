#pragma once
// The HTTP API's endpoints: routes each request an http_session reads (http_router.hpp) and answers
// it through that session: a response, an exchange that answers over time (sse_generation), or the
// hand-over of the socket to a WebSocket session. One per server, shared by every session.
//
// Status codes: 400 bad JSON or arguments, 401 missing or wrong API key (every route but /health and
// the chat page), 403 Host or Origin refused (access_policy.hpp), 404 unknown route or model, 405
// wrong method, 413 body too large, 415 a POST body not sent as JSON, 429 waiting queue full, 503
// while the model loads (every route that needs it) or the server drains.
//
// Draining: generations and upgrades get 503 shutting_down, /health 503 "draining", and every answer
// closes its connection. Loading (no engine in the serving state yet): every route that needs the
// model answers 503 model_loading, /health 503 "loading"; /version and the chat page's files work.
#include <memory>
#include <string>
#include <string_view>

#include "net/net_common.hpp"
#include "net/serving_state.hpp"
#include "net/static_files.hpp"
#include "pagedserve/config.hpp"
#include "pagedserve/engine_api.hpp"
#include "api/openai_request.hpp"

namespace pagedserve::net {

class http_session;

class http_api {
 public:
  using request = http::request<http::string_body>;
  http_api(std::shared_ptr<const serving_state> state, const server_config& config,
           std::shared_ptr<const static_files> web);
  // Answers req, the session's current request.
  void handle(const std::shared_ptr<http_session>& s, request req) const;

 private:
  bool refuse_if_draining(http_session& s, std::string_view path) const;
  void refuse_while_loading(http_session& s, const request& req, std::string_view path) const;
  std::string served_name(const engine_api& e) const;
  bool model_known(const engine_api& e, std::string_view name) const;
  void serve_status(const std::shared_ptr<http_session>& s, engine_api& e, bool metrics) const;
  void serve_models(http_session& s, const engine_api& e, std::string_view path) const;
  void serve_tokenize(http_session& s, const engine_api& e, const request& req) const;
  void serve_detokenize(http_session& s, const engine_api& e, const request& req) const;
  void serve_generation(const std::shared_ptr<http_session>& s, engine_api& e, openai::endpoint kind,
                        const request& req) const;
  void serve_static(http_session& s, const request& req, std::string_view path) const;

  std::shared_ptr<const serving_state> state_;
  const server_config& config_;
  std::shared_ptr<const static_files> web_;  // the chat page
};

}  // namespace pagedserve::net
