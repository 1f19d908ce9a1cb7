// Routing of http_session: authorization, CORS, and every endpoint but the generations
// (sse_generation.cpp). Status codes: 400 bad JSON or arguments, 401 missing or wrong API key (every
// route but /health and the chat page), 403 Host or Origin refused (access_policy.hpp), 404 unknown
// route or model, 405 wrong method, 413 body too large, 415 a POST body not sent as JSON, 429 waiting
// queue full, 503 while the model loads (every route that needs it) or the server drains.
#include <boost/asio/post.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "actors/logger.hpp"
#include "net/access_policy.hpp"
#include "net/http_session.hpp"
#include "net/sse_generation.hpp"
#include "pagedserve/openai_response.hpp"

namespace pagedserve::net {
namespace {

// The routes and the methods each takes (HEAD goes with GET).
struct route_spec {
  std::string_view path;
  http::verb method;
};
constexpr route_spec routes[] = {
    {"/health", http::verb::get},         {"/version", http::verb::get},
    {"/metrics", http::verb::get},        {"/v1/models", http::verb::get},
    {"/v1/completions", http::verb::post}, {"/v1/chat/completions", http::verb::post},
    {"/tokenize", http::verb::post},       {"/detokenize", http::verb::post},
    {"/v1/ws", http::verb::get},
};

// The spec of path's route; /v1/models/<id> is /v1/models's.
const route_spec* find_route(std::string_view path) {
  if (path.starts_with("/v1/models/")) path = "/v1/models";
  for (const route_spec& r : routes)
    if (r.path == path) return &r;
  return nullptr;
}

// Equal strings in time that does not depend on where they differ.
bool constant_time_equal(std::string_view a, std::string_view b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ (i < b.size() ? b[i] : 0));
  return diff == 0;
}

// RFC 4648 base64url without padding: every character is an HTTP token character, so a key of any
// bytes fits in Sec-WebSocket-Protocol.
std::string base64url(std::string_view bytes) {
  constexpr std::string_view alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::string out;
  std::uint32_t acc = 0;
  int bits = 0;
  for (const unsigned char c : bytes) {
    acc = (acc << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(acc >> bits) & 63]);
    }
  }
  if (bits > 0) out.push_back(alphabet[(acc << (6 - bits)) & 63]);
  return out;
}

// Resident set size of this process, from /proc (0 where unavailable).
std::uint64_t resident_bytes() {
  std::FILE* f = std::fopen("/proc/self/statm", "r");
  if (!f) return 0;
  unsigned long long pages_total = 0, pages_resident = 0;
  const int n = std::fscanf(f, "%llu %llu", &pages_total, &pages_resident);
  std::fclose(f);
  return n == 2 ? pages_resident * static_cast<std::uint64_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

std::string health_body(const engine& e, const engine_status& s, bool draining, std::string_view replica) {
  std::string out = draining ? R"({"status":"draining","replica":)" : R"({"status":"ok","replica":)";
  json_append_string(out, replica);
  out += R"(,"model":)";
  json_append_string(out, e.served_model().name);
  out += R"(,"running":)" + std::to_string(s.scheduler.running) + R"(,"waiting":)" +
         std::to_string(s.scheduler.waiting) + R"(,"kv_blocks_total":)" + std::to_string(s.kv.blocks_total) +
         R"(,"kv_blocks_free":)" + std::to_string(s.kv.blocks_free) + R"(,"kv_block_size":)" +
         std::to_string(s.kv.block_size) + R"(,"kv_sequences":)" + std::to_string(s.kv.sequences) +
         R"(,"kv_blocks_cached":)" + std::to_string(s.kv.blocks_cached) + R"(,"prefix_cache_queries":)" +
         std::to_string(s.kv.prefix_cache_queries) + R"(,"prefix_cache_hits":)" + std::to_string(s.kv.prefix_cache_hits) +
         R"(,"kv_forks":)" + std::to_string(s.kv.forks) + R"(,"kv_block_copies":)" + std::to_string(s.kv.block_copies) +
         R"(,"executor_busy_seconds":)" + std::to_string(s.executor.busy_seconds) +
         R"(,"executor_gap_seconds":)" + std::to_string(s.executor.gap_seconds) +
         R"(,"preemptions":)" + std::to_string(s.scheduler.preemptions) + R"(,"steps":)" +
         std::to_string(s.scheduler.steps) + R"(,"rss_bytes":)" + std::to_string(resident_bytes()) +
         R"(,"version":")" PAGEDSERVE_VERSION R"("})";
  return out;
}

std::int64_t started_at() {
  static const std::int64_t t =
      std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  return t;
}

// The Access-Control-Allow-Origin value for a request from origin, given the configured list.
std::string cors_origin_for(std::string_view allowed, std::string_view origin) {
  if (allowed.empty()) return {};
  if (allowed == "*") return "*";
  while (!allowed.empty()) {
    const std::size_t comma = allowed.find(',');
    std::string_view item = allowed.substr(0, comma);
    while (!item.empty() && item.front() == ' ') item.remove_prefix(1);
    while (!item.empty() && item.back() == ' ') item.remove_suffix(1);
    if (!origin.empty() && item == origin) return std::string(origin);
    allowed = comma == std::string_view::npos ? std::string_view{} : allowed.substr(comma + 1);
  }
  return {};
}

}  // namespace

void http_session::route(request req) {
  const std::string_view target = req.target();
  const std::string_view path = target.substr(0, target.find('?'));
  cors_origin_ = cors_origin_for(config_.cors_allow_origin, req[http::field::origin]);
  const request_origin from{req[http::field::host], req[http::field::origin], req.count(http::field::origin) > 0};
  if (auto refused = refuse_origin(config_, from)) {
    keep_alive_ = keep_alive_ && !websocket::is_upgrade(req);
    return respond_error(*refused);
  }
  if (req.method() == http::verb::options) return serve_preflight(req);
  if (draining_ && refuse_if_draining(path)) return;
  const route_spec* r = find_route(path);
  const bool get_like = req.method() == http::verb::get || req.method() == http::verb::head;
  if (!r && get_like && !path.starts_with("/v1/") && !websocket::is_upgrade(req)) return serve_static(req, path);
  if (!r) {
    keep_alive_ = keep_alive_ && !websocket::is_upgrade(req);
    return respond_error({404, "no route for " + std::string(path), "invalid_request_error", "", "not_found"});
  }
  const bool method_ok = req.method() == r->method || (r->method == http::verb::get && req.method() == http::verb::head);
  if (!method_ok) {
    const std::string allow = r->method == http::verb::get ? "GET, HEAD, OPTIONS" : "POST, OPTIONS";
    respond(http::status::method_not_allowed, "application/json",
            openai::encode_error({405, "use " + std::string(http::to_string(r->method)) + " " + std::string(r->path),
                                  "invalid_request_error", "", "method_not_allowed"}),
            {{"Allow", allow}});
    return;
  }
  if (api_key_required(config_, path) && !authorized(req)) {
    keep_alive_ = keep_alive_ && !websocket::is_upgrade(req);
    respond(http::status::unauthorized, "application/json",
            openai::encode_error({401, "Incorrect or missing API key: send 'Authorization: Bearer <key>'",
                                  "invalid_request_error", "", "invalid_api_key"}),
            {{"WWW-Authenticate", "Bearer"}});
    return;
  }
  if (r->method == http::verb::post)
    if (auto refused = refuse_content_type(req[http::field::content_type])) return respond_error(*refused);
  if (!engine_) engine_ = state_->engine_if_ready();
  if (!engine_ && path != "/version") return refuse_while_loading(req, path);
  if (path == "/v1/ws") {
    if (!websocket::is_upgrade(req))
      return respond_error({400, "/v1/ws takes a WebSocket upgrade", "invalid_request_error", "", "upgrade_required"});
    return upgrade(std::move(req));
  }
  if (path == "/health") return serve_status(false);
  if (path == "/metrics") return serve_status(true);
  if (path == "/version") return respond_json(http::status::ok, R"({"version":")" PAGEDSERVE_VERSION R"("})");
  if (path.starts_with("/v1/models")) return serve_models(path);
  if (path == "/v1/completions") return serve_generation(openai::endpoint::completions, req);
  if (path == "/v1/chat/completions") return serve_generation(openai::endpoint::chat_completions, req);
  if (path == "/tokenize") return serve_tokenize(req);
  return serve_detokenize(req);
}

bool http_session::refuse_if_draining(std::string_view path) {
  keep_alive_ = false;  // every answer during the drain is the connection's last
  if (path != "/v1/completions" && path != "/v1/chat/completions" && path != "/v1/ws") return false;
  respond_error({503, "the server is shutting down; retry on another instance", "server_error", "", "shutting_down"});
  return true;
}

void http_session::refuse_while_loading(const request& req, std::string_view path) {
  // llama-server's answer while it loads, so load balancers and clients written for it wait here too.
  if (path == "/health") {
    std::string body = R"({"status":"loading","replica":)";
    json_append_string(body, config_.replica_name);
    body += R"(,"version":")" PAGEDSERVE_VERSION R"("})";
    return respond(http::status::service_unavailable, "application/json", std::move(body), {{"Retry-After", "1"}});
  }
  keep_alive_ = keep_alive_ && !websocket::is_upgrade(req);  // a refused upgrade sends nothing more
  respond_error({503, "Loading model: retry once GET /health answers 200", "unavailable_error", "", "model_loading"});
}

bool http_session::authorized(const request& req) const {
  if (config_.api_key.empty()) return true;
  // Browsers cannot set headers on a WebSocket: they offer the key as a subprotocol instead.
  if (websocket::is_upgrade(req)) {
    const std::string expected = std::string(ws_key_protocol_prefix) + base64url(config_.api_key);
    bool match = false;
    for_each_ws_protocol(req[http::field::sec_websocket_protocol],
                         [&](std::string_view p) { match = constant_time_equal(p, expected) || match; });
    if (match) return true;
  }
  const std::string_view value = req[http::field::authorization];
  constexpr std::string_view scheme = "Bearer ";
  if (value.size() <= scheme.size() || !beast::iequals(value.substr(0, scheme.size()), scheme)) return false;
  return constant_time_equal(value.substr(scheme.size()), config_.api_key);
}

std::string http_session::served_name() const {
  return config_.served_model_name.empty() ? engine_->served_model().name : config_.served_model_name;
}

bool http_session::model_known(std::string_view name) const {
  return name.empty() || name == served_name() || name == engine_->served_model().name;
}

void http_session::respond(http::status status, std::string_view content_type, std::string body,
                           const header_list& extra) {
  std::string bytes = head(status, content_type, body.size(), extra);
  if (!head_only_) bytes += body;
  send(std::move(bytes));
  finish_response();
}

void http_session::respond_error(const openai::api_error& e) {
  header_list extra;
  if (e.status == 429 || e.status == 503) extra.emplace_back("Retry-After", "1");
  respond(static_cast<http::status>(e.status), "application/json", openai::encode_error(e), extra);
}

void http_session::serve_preflight(const request& req) {
  header_list extra{{"Allow", "GET, HEAD, POST, OPTIONS"}};
  if (!cors_origin_.empty()) {
    extra.emplace_back("Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
    const std::string_view asked = req[http::field::access_control_request_headers];
    extra.emplace_back("Access-Control-Allow-Headers", asked.empty() ? "Authorization, Content-Type" : std::string(asked));
    extra.emplace_back("Access-Control-Max-Age", "600");
  }
  respond(http::status::no_content, "", "", extra);
}

void http_session::serve_static(const request& req, std::string_view path) {
  auto file = web_->lookup(path);
  if (!file) {
    if (file.error() == static_error::too_large)
      return respond_error({500, "file too large to serve", "server_error", "", "file_too_large"});
    return respond_error({404, "no route for " + std::string(path), "invalid_request_error", "", "not_found"});
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
  if (req[http::field::if_none_match] == file->etag) return respond(http::status::not_modified, "", "", extra);
  respond(http::status::ok, file->content_type, std::move(file->body), extra);
}

void http_session::serve_status(bool metrics) {
  engine_->report_status([self = shared_from_this(), metrics](engine_status s) {
    asio::post(self->executor_, [self, metrics, s] {
      // Draining: 503 so load balancers stop sending here while in-flight requests finish.
      if (!metrics)
        return self->respond_json(self->draining_ ? http::status::service_unavailable : http::status::ok,
                                  health_body(*self->engine_, s, self->draining_, self->config_.replica_name));
      engine_gauges g;
      g.running = s.scheduler.running;
      g.waiting = s.scheduler.waiting;
      g.kv_cache_usage = s.kv.blocks_total > 0
                             ? static_cast<double>(s.kv.blocks_total - s.kv.blocks_free) / s.kv.blocks_total
                             : 0.0;
      g.preemptions = s.scheduler.preemptions;
      g.steps = s.scheduler.steps;
      g.prefix_cache_queries = s.kv.prefix_cache_queries;
      g.prefix_cache_hits = s.kv.prefix_cache_hits;
      g.executor_busy_seconds = s.executor.busy_seconds;
      g.executor_gap_seconds = s.executor.gap_seconds;
      self->respond(http::status::ok, "text/plain; version=0.0.4; charset=utf-8",
                    self->engine_->metrics().render(g, self->served_name(), self->config_.replica_name));
    });
  });
}

void http_session::serve_models(std::string_view path) {
  const openai::model_card card{served_name(), engine_->served_model().name, started_at(), engine_->max_sequence_tokens()};
  if (path == "/v1/models") return respond_json(http::status::ok, openai::encode_models({card}));
  const std::string_view id = path.substr(std::string_view("/v1/models/").size());
  if (!model_known(id) || id.empty())
    return respond_error({404, "The model '" + std::string(id) + "' does not exist", "invalid_request_error", "model",
                          "model_not_found"});
  respond_json(http::status::ok, openai::encode_model(card));
}

void http_session::serve_tokenize(const request& req) {
  auto parsed = openai::parse_tokenize_request(req.body());
  if (!parsed) return respond_error(parsed.error());
  if (!model_known(parsed->model))
    return respond_error({404, "The model '" + parsed->model + "' does not exist", "invalid_request_error", "model",
                          "model_not_found"});
  const tokenizer& vocab = engine_->vocabulary();
  const std::vector<token_id> ids = vocab.encode(parsed->prompt, parsed->add_special_tokens);
  std::vector<std::string> strs;
  if (parsed->return_token_strs)
    for (const token_id id : ids) strs.push_back(vocab.token_text(id));
  respond_json(http::status::ok,
               openai::encode_tokenize(ids, engine_->max_sequence_tokens(), parsed->return_token_strs ? &strs : nullptr));
}

void http_session::serve_detokenize(const request& req) {
  openai::parse_limits limits;
  limits.vocab_size = engine_->vocabulary().vocab_size();
  auto parsed = openai::parse_detokenize_request(req.body(), limits);
  if (!parsed) return respond_error(parsed.error());
  if (!model_known(parsed->model))
    return respond_error({404, "The model '" + parsed->model + "' does not exist", "invalid_request_error", "model",
                          "model_not_found"});
  respond_json(http::status::ok, openai::encode_detokenize(engine_->vocabulary().decode(parsed->tokens, false)));
}

void http_session::serve_generation(openai::endpoint kind, const request& req) {
  openai::parse_limits limits;
  limits.vocab_size = engine_->vocabulary().vocab_size();
  limits.defaults = engine_->request_defaults();
  auto parsed = kind == openai::endpoint::completions ? openai::parse_completion_request(req.body(), limits)
                                                      : openai::parse_chat_request(req.body(), limits);
  if (!parsed) return respond_error(parsed.error());
  if (!model_known(parsed->model))
    return respond_error({404, "The model '" + parsed->model + "' does not exist", "invalid_request_error", "model",
                          "model_not_found"});
  openai::response_meta meta;
  meta.kind = kind;
  meta.id = openai::new_response_id(kind);
  meta.created = std::chrono::duration_cast<std::chrono::seconds>(
                     std::chrono::system_clock::now().time_since_epoch()).count();
  meta.model = parsed->model.empty() ? served_name() : parsed->model;
  auto generation = std::make_shared<sse_generation>(shared_from_this(), *engine_, std::move(*parsed), std::move(meta));
  exchange_ = generation;
  generation->start();
}

}  // namespace pagedserve::net
