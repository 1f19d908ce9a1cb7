#include "net/http_api.hpp"

#include <boost/asio/post.hpp>

#include <chrono>

#include "net/access_policy.hpp"
#include "net/api_key_auth.hpp"
#include "net/cors.hpp"
#include "net/health_report.hpp"
#include "net/http_router.hpp"
#include "net/http_session.hpp"
#include "net/sse_generation.hpp"
#include "actors/logger.hpp"
#include "api/openai_response.hpp"

namespace pagedserve::net {
namespace {

std::int64_t started_at() {
  static const std::int64_t t =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return t;
}

openai::api_error model_not_found(std::string_view name) {
  return {404, "The model '" + std::string(name) + "' does not exist", "invalid_request_error", "model",
          "model_not_found"};
}

}  // namespace

http_api::http_api(std::shared_ptr<const serving_state> state, const server_config& config,
                   std::shared_ptr<const static_files> web)
    : state_(std::move(state)), config_(config), web_(std::move(web)) {}

void http_api::handle(const std::shared_ptr<http_session>& s, request req) const {
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  const bool upgrade = websocket::is_upgrade(req);
  s->set_cors_origin(cors_origin_for(config_.cors_allow_origin, req[http::field::origin]));
  const request_origin from{req[http::field::host], req[http::field::origin], req.count(http::field::origin) > 0};
  if (auto refused = refuse_origin(config_, from)) {
    if (upgrade) s->end_connection();
    return s->respond_error(*refused);
  }
  if (req.method() == http::verb::options)
    return s->respond(http::status::no_content, "", "",
                      cors_preflight_headers(s->cors_origin(), req[http::field::access_control_request_headers]));
  if (s->draining() && refuse_if_draining(*s, path)) return;
  const std::optional<route_spec> r = find_route(path);
  const bool get_like = req.method() == http::verb::get || req.method() == http::verb::head;
  if (!r && get_like && !path.starts_with("/v1/") && !upgrade) return serve_static(*s, req, path);
  if (!r) {
    if (upgrade) s->end_connection();
    return s->respond_error({404, "no route for " + std::string(path), "invalid_request_error", "", "not_found"});
  }
  if (!route_accepts(*r, req.method())) {
    return s->respond(http::status::method_not_allowed, "application/json",
                      openai::encode_error({405, "use " + std::string(http::to_string(r->method)) + " " +
                                                     std::string(r->path),
                                            "invalid_request_error", "", "method_not_allowed"}),
                      {{"Allow", std::string(route_allow(*r))}});
  }
  const api_key_headers key{req[http::field::authorization], req[http::field::sec_websocket_protocol], upgrade};
  if (api_key_required(config_, path) && !api_key_accepted(config_.api_key, key)) {
    if (upgrade) s->end_connection();
    return s->respond(http::status::unauthorized, "application/json",
                      openai::encode_error({401, "Incorrect or missing API key: send 'Authorization: Bearer <key>'",
                                            "invalid_request_error", "", "invalid_api_key"}),
                      {{"WWW-Authenticate", "Bearer"}});
  }
  if (r->method == http::verb::post)
    if (auto refused = refuse_content_type(req[http::field::content_type])) return s->respond_error(*refused);
  if (r->route == http_route::version)
    return s->respond_json(http::status::ok, R"({"version":")" PAGEDSERVE_VERSION R"("})");
  engine_api* e = state_->engine_if_ready();
  if (!e) return refuse_while_loading(*s, req, path);
  switch (r->route) {
    case http_route::websocket:
      if (!upgrade)
        return s->respond_error(
            {400, "/v1/ws takes a WebSocket upgrade", "invalid_request_error", "", "upgrade_required"});
      return s->upgrade(std::move(req), *e);
    case http_route::health: return serve_status(s, *e, false);
    case http_route::metrics: return serve_status(s, *e, true);
    case http_route::models: return serve_models(*s, *e, path);
    case http_route::completions: return serve_generation(s, *e, openai::endpoint::completions, req);
    case http_route::chat_completions: return serve_generation(s, *e, openai::endpoint::chat_completions, req);
    case http_route::tokenize: return serve_tokenize(*s, *e, req);
    case http_route::detokenize: return serve_detokenize(*s, *e, req);
    case http_route::version: break;  // answered above, loaded or not
  }
}

bool http_api::refuse_if_draining(http_session& s, std::string_view path) const {
  s.end_connection();  // every answer during the drain is the connection's last
  if (path != "/v1/completions" && path != "/v1/chat/completions" && path != "/v1/ws") return false;
  s.respond_error({503, "the server is shutting down; retry on another instance", "server_error", "", "shutting_down"});
  return true;
}

void http_api::refuse_while_loading(http_session& s, const request& req, std::string_view path) const {
  // llama-server's answer while it loads, so load balancers and clients written for it wait here too.
  if (path == "/health")
    return s.respond(http::status::service_unavailable, "application/json", loading_health_body(config_.replica_name),
                     {{"Retry-After", "1"}});
  if (websocket::is_upgrade(req)) s.end_connection();  // a refused upgrade sends nothing more
  s.respond_error({503, "Loading model: retry once GET /health answers 200", "unavailable_error", "", "model_loading"});
}

std::string http_api::served_name(const engine_api& e) const {
  return config_.served_model_name.empty() ? e.model_card().name : config_.served_model_name;
}

bool http_api::model_known(const engine_api& e, std::string_view name) const {
  return name.empty() || name == served_name(e) || name == e.model_card().name;
}

void http_api::serve_static(http_session& s, const request& req, std::string_view path) const {
  auto file = web_->lookup(path);
  if (!file) {
    if (file.error() == static_error::too_large)
      return s.respond_error({500, "file too large to serve", "server_error", "", "file_too_large"});
    return s.respond_error({404, "no route for " + std::string(path), "invalid_request_error", "", "not_found"});
  }
  // no-cache: the browser keeps the file but asks each time, so an edited page shows at once (a 304
  // when unchanged). The policy lets the page load only its own files and talk only to this server.
  header_list extra{{"Cache-Control", "no-cache"},
                    {"ETag", file->etag},
                    {"X-Content-Type-Options", "nosniff"},
                    {"Referrer-Policy", "no-referrer"},
                    {"Content-Security-Policy",
                     "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
                     "connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"}};
  if (req[http::field::if_none_match] == file->etag) return s.respond(http::status::not_modified, "", "", extra);
  s.respond(http::status::ok, file->content_type, std::move(file->body), extra);
}

void http_api::serve_status(const std::shared_ptr<http_session>& s, engine_api& e, bool metrics) const {
  // The name is read now: the engine's reply comes on another strand.
  e.report_status([s, &e, metrics, name = served_name(e), replica = config_.replica_name](engine_status st) {
    asio::post(s->executor(), [s, &e, metrics, name, replica, st] {
      // Draining: 503 so load balancers stop sending here while in-flight requests finish.
      if (!metrics)
        return s->respond_json(s->draining() ? http::status::service_unavailable : http::status::ok,
                               health_body(e.model_card().name, st, s->draining(), replica));
      s->respond(http::status::ok, "text/plain; version=0.0.4; charset=utf-8",
                 e.metrics().render(gauges_of(st), name, replica));
    });
  });
}

void http_api::serve_models(http_session& s, const engine_api& e, std::string_view path) const {
  const engine_model_card m = e.model_card();
  const openai::model_card card{served_name(e), m.name, started_at(), m.max_sequence_tokens};
  if (path == "/v1/models") return s.respond_json(http::status::ok, openai::encode_models({card}));
  const std::string_view id = path.substr(std::string_view("/v1/models/").size());
  if (!model_known(e, id) || id.empty()) return s.respond_error(model_not_found(id));
  s.respond_json(http::status::ok, openai::encode_model(card));
}

void http_api::serve_tokenize(http_session& s, const engine_api& e, const request& req) const {
  auto parsed = openai::parse_tokenize_request(req.body());
  if (!parsed) return s.respond_error(parsed.error());
  if (!model_known(e, parsed->model)) return s.respond_error(model_not_found(parsed->model));
  const tokenizer& vocab = e.vocabulary();
  const std::vector<token_id> ids = vocab.encode(parsed->prompt, parsed->add_special_tokens);
  std::vector<std::string> strs;
  if (parsed->return_token_strs)
    for (const token_id id : ids) strs.push_back(vocab.token_text(id));
  s.respond_json(http::status::ok, openai::encode_tokenize(ids, e.model_card().max_sequence_tokens,
                                                           parsed->return_token_strs ? &strs : nullptr));
}

void http_api::serve_detokenize(http_session& s, const engine_api& e, const request& req) const {
  openai::parse_limits limits;
  limits.vocab_size = e.vocabulary().vocab_size();
  auto parsed = openai::parse_detokenize_request(req.body(), limits);
  if (!parsed) return s.respond_error(parsed.error());
  if (!model_known(e, parsed->model)) return s.respond_error(model_not_found(parsed->model));
  s.respond_json(http::status::ok, openai::encode_detokenize(e.vocabulary().decode(parsed->tokens, false)));
}

void http_api::serve_generation(const std::shared_ptr<http_session>& s, engine_api& e, openai::endpoint kind,
                                const request& req) const {
  openai::parse_limits limits;
  limits.vocab_size = e.vocabulary().vocab_size();
  limits.defaults = e.request_defaults();
  limits.max_logprobs = s->config().max_logprobs;
  auto parsed = kind == openai::endpoint::completions ? openai::parse_completion_request(req.body(), limits)
                                                      : openai::parse_chat_request(req.body(), limits);
  if (!parsed) return s->respond_error(parsed.error());
  if (!model_known(e, parsed->model)) return s->respond_error(model_not_found(parsed->model));
  if (const auto fresh = s->fields_to_warn(parsed->ignored_fields); !fresh.empty())
    actor_logger("net")->warn("a client sent request fields this server ignores: {}",
                              openai::ignored_fields_header(fresh));
  openai::response_meta meta;
  meta.kind = kind;
  meta.id = openai::new_response_id(kind);
  meta.created =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  meta.model = parsed->model.empty() ? served_name(e) : parsed->model;
  auto generation = std::make_shared<sse_generation>(s, e, std::move(*parsed), std::move(meta));
  s->begin_exchange(generation);
  generation->start();
}

}  // namespace pagedserve::net
