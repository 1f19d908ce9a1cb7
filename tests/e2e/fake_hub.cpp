#include "e2e/fake_hub.hpp"

#include <sys/socket.h>

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>

#include <algorithm>
#include <chrono>
#include <optional>

#include "src/hub/sha256.hpp"

namespace pagedserve::e2e {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using tcp = asio::ip::tcp;

struct stored_file {
  fake_hub_file file;
  std::string sha256;   // of the content: the LFS oid and its ETag
  std::string blob_id;  // stands in for the git blob id: a regular file's ETag
};

struct stored_repo {
  std::string commit;
  std::vector<stored_file> files;
};

std::string percent_decode(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      out += static_cast<char>(std::stoi(std::string(s.substr(i + 1, 2)), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) out += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
  return out;
}

struct response {
  int status = 200;
  std::string reason = "OK";
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  // For file bodies: the whole file, the range of it sent, and whether it is a CDN download.
  const stored_file* file = nullptr;
  std::uint64_t first = 0, length = 0;
};

}  // namespace

struct fake_hub::impl {
  asio::io_context io;
  tcp::acceptor hub{io}, cdn{io};
  unsigned short hub_port = 0, cdn_port = 0;
  std::thread hub_thread, cdn_thread;
  std::atomic<bool> stopping{false};
  std::optional<asio::ssl::context> tls;

  mutable std::mutex mu;  // guards everything below
  std::map<std::string, stored_repo> repos;
  std::string token;
  std::map<std::string, std::pair<std::uint64_t, int>> cuts;  // file -> (bytes, times left)
  std::vector<std::string> corrupted;
  bool no_range = false;
  std::uint64_t rate = 0;
  std::vector<fake_hub_request> log;
  std::map<std::string, std::uint64_t> sent;
  std::vector<std::thread> connections;
  std::vector<int> open_fds;

  void listen(tcp::acceptor& a, unsigned short& port) {
    a.open(tcp::v4());
    a.set_option(tcp::acceptor::reuse_address(true));
    a.bind({asio::ip::make_address("127.0.0.1"), 0});
    a.listen();
    port = a.local_endpoint().port();
  }

  void accept_loop(tcp::acceptor& a, bool is_cdn) {
    for (;;) {
      boost::system::error_code ec;
      tcp::socket s(io);
      a.accept(s, ec);
      if (stopping || ec) return;
      std::lock_guard lock(mu);
      open_fds.push_back(s.native_handle());
      connections.emplace_back([this, is_cdn, sock = std::move(s)]() mutable { serve(std::move(sock), is_cdn); });
    }
  }

  void serve(tcp::socket s, bool is_cdn) {
    if (!tls) return serve_on(s, is_cdn, "");
    asio::ssl::stream<tcp::socket> stream(std::move(s), *tls);
    boost::system::error_code ec;
    stream.handshake(asio::ssl::stream_base::server, ec);
    if (ec) return;  // the client refused the certificate
    const char* sni = SSL_get_servername(stream.native_handle(), TLSEXT_NAMETYPE_host_name);
    serve_on(stream, is_cdn, sni ? sni : "");
    stream.next_layer().shutdown(tcp::socket::shutdown_both, ec);
  }

  template <class Stream>
  void serve_on(Stream& s, bool is_cdn, const std::string& sni) {
    boost::beast::flat_buffer buffer;
    http::request<http::string_body> req;
    boost::system::error_code ec;
    http::read(s, buffer, req, ec);
    if (ec) return;
    fake_hub_request seen{is_cdn, std::string(req.target()), std::string(req[http::field::range]),
                          std::string(req[http::field::authorization]), sni};
    std::optional<std::pair<std::uint64_t, int>> cut;
    response r;
    {
      std::lock_guard lock(mu);
      log.push_back(seen);
      r = route(seen, is_cdn);
      if (r.file && is_cdn) {
        if (auto it = cuts.find(r.file->file.name); it != cuts.end() && it->second.second > 0) {
          cut = it->second;
          --it->second.second;
        }
      }
    }
    send(s, r, cut);
    if constexpr (std::is_same_v<Stream, tcp::socket>) s.shutdown(tcp::socket::shutdown_both, ec);
  }

  template <class Stream>
  void send(Stream& s, const response& r, const std::optional<std::pair<std::uint64_t, int>>& cut) {
    const std::uint64_t length = r.file ? r.length : r.body.size();
    std::string head = "HTTP/1.1 " + std::to_string(r.status) + " " + r.reason + "\r\n";
    for (const auto& [k, v] : r.headers) head += k + ": " + v + "\r\n";
    head += "Content-Length: " + std::to_string(length) + "\r\nConnection: close\r\n\r\n";
    boost::system::error_code ec;
    asio::write(s, asio::buffer(head), ec);
    if (ec) return;
    if (!r.file) {
      asio::write(s, asio::buffer(r.body), ec);
      return;
    }
    std::string bytes = r.file->file.bytes.substr(r.first, r.length);
    bool corrupt_it = false;
    std::uint64_t bps = 0;
    {
      std::lock_guard lock(mu);
      corrupt_it = std::find(corrupted.begin(), corrupted.end(), r.file->file.name) != corrupted.end();
      bps = rate;
    }
    const std::uint64_t middle = r.file->file.bytes.size() / 2;
    if (corrupt_it && middle >= r.first && middle < r.first + r.length) bytes[middle - r.first] ^= 0x5a;
    const std::uint64_t limit = cut ? std::min<std::uint64_t>(cut->first, bytes.size()) : bytes.size();
    const std::size_t chunk = bps ? std::max<std::uint64_t>(bps / 20, 1) : 256 * 1024;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::uint64_t at = 0; at < limit && !stopping;) {
      const std::size_t n = static_cast<std::size_t>(std::min<std::uint64_t>(chunk, limit - at));
      asio::write(s, asio::buffer(bytes.data() + at, n), ec);
      if (ec) return;
      at += n;
      {
        std::lock_guard lock(mu);
        sent[r.file->file.name] += n;
      }
      if (bps) std::this_thread::sleep_until(t0 + std::chrono::microseconds(at * 1'000'000 / bps));
    }
  }

  // Answers one request (mu held).
  response route(const fake_hub_request& q, bool is_cdn) {
    response r;
    auto error = [&](int status, const char* reason, const std::string& code, const std::string& message) {
      r.status = status;
      r.reason = reason;
      if (!code.empty()) r.headers.emplace_back("X-Error-Code", code);
      r.headers.emplace_back("X-Error-Message", message);
      r.body = "{\"error\":\"" + json_escape(message) + "\"}";
      return r;
    };
    std::string path = q.target.substr(0, q.target.find('?'));
    if (is_cdn) {
      // /cdn/{sha256}: the signed-URL store; no token needed, Range honoured.
      if (!path.starts_with("/cdn/")) return error(404, "Not Found", "", "no such object");
      for (const auto& [name, repo] : repos)
        for (const stored_file& f : repo.files)
          if (f.sha256 == path.substr(5)) return ranged(f, q.range);
      return error(404, "Not Found", "", "no such object");
    }
    if (!token.empty() && q.authorization != "Bearer " + token)
      return error(401, "Unauthorized", "", "Invalid credentials in Authorization header");
    std::string rest;
    const bool api = path.starts_with("/api/models/");
    const bool cached = path.starts_with("/api/resolve-cache/models/");
    if (api) rest = path.substr(12);
    else if (cached) rest = path.substr(26);
    else rest = path.substr(1);
    // rest: org/name/<...>
    const auto s1 = rest.find('/'), s2 = s1 == std::string::npos ? s1 : rest.find('/', s1 + 1);
    if (s2 == std::string::npos) return error(404, "Not Found", "", "bad path");
    const std::string repo_id = rest.substr(0, s2);
    auto repo = repos.find(repo_id);
    if (repo == repos.end()) return error(404, "Not Found", "RepoNotFound", "Repository not found");
    std::string tail = rest.substr(s2 + 1);
    if (api) {
      if (!tail.starts_with("revision/")) return error(404, "Not Found", "", "bad path");
      const std::string rev = percent_decode(tail.substr(9));
      if (rev != "main" && rev != repo->second.commit)
        return error(404, "Not Found", "RevisionNotFound", "Invalid rev id: " + rev);
      return listing(repo_id, repo->second);
    }
    if (!cached) {
      if (!tail.starts_with("resolve/")) return error(404, "Not Found", "", "bad path");
      tail = tail.substr(8);
    }
    const auto slash = tail.find('/');
    const std::string rev = tail.substr(0, slash), file = percent_decode(tail.substr(slash + 1));
    if (rev != "main" && rev != repo->second.commit)
      return error(404, "Not Found", "RevisionNotFound", "Invalid rev id: " + rev);
    const stored_file* f = nullptr;
    for (const stored_file& s : repo->second.files)
      if (s.file.name == file) f = &s;
    if (!f) return error(404, "Not Found", "EntryNotFound", "Entry not found");
    r.headers.emplace_back("X-Repo-Commit", repo->second.commit);
    if (f->file.lfs) {
      r.status = 302;
      r.reason = "Found";
      r.headers.emplace_back("ETag", "\"" + f->blob_id + "\"");  // the pointer file's; X-Linked-Etag wins
      r.headers.emplace_back("X-Linked-Etag", "\"" + f->sha256 + "\"");
      r.headers.emplace_back("X-Linked-Size", std::to_string(f->file.bytes.size()));
      r.headers.emplace_back("Location", std::string(tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(cdn_port) + "/cdn/" + f->sha256 +
                                             "?X-Amz-Signature=test");
      return r;
    }
    if (!cached) {  // the hub's own redirect of small files, relative
      r.status = 307;
      r.reason = "Temporary Redirect";
      r.headers.emplace_back("Location", "/api/resolve-cache/models/" + repo_id + "/" + repo->second.commit + "/" +
                                             tail.substr(slash + 1));
      return r;
    }
    r.headers.emplace_back("ETag", "\"" + f->blob_id + "\"");
    return ranged(*f, q.range, std::move(r.headers));
  }

  response ranged(const stored_file& f, const std::string& range, decltype(response::headers) headers = {}) {
    response r;
    r.headers = std::move(headers);
    r.file = &f;
    r.length = f.file.bytes.size();
    if (!range.empty() && !no_range && range.starts_with("bytes=") && range.ends_with("-")) {
      const std::uint64_t from = std::stoull(range.substr(6, range.size() - 7));
      if (from < f.file.bytes.size()) {
        r.status = 206;
        r.reason = "Partial Content";
        r.first = from;
        r.length = f.file.bytes.size() - from;
        r.headers.emplace_back("Content-Range", "bytes " + std::to_string(from) + "-" +
                                                    std::to_string(f.file.bytes.size() - 1) + "/" +
                                                    std::to_string(f.file.bytes.size()));
      }
    }
    r.headers.emplace_back("Accept-Ranges", "bytes");
    return r;
  }

  response listing(const std::string& repo_id, const stored_repo& repo) {
    std::string j = "{\"_id\":\"x\",\"id\":\"" + repo_id + "\",\"sha\":\"" + repo.commit + "\",\"siblings\":[";
    for (std::size_t i = 0; i < repo.files.size(); ++i) {
      const stored_file& f = repo.files[i];
      const std::string size = std::to_string(f.file.bytes.size());
      j += (i ? "," : "") + std::string("{\"rfilename\":\"") + json_escape(f.file.name) + "\",\"blobId\":\"" +
           f.blob_id + "\",\"size\":" + (f.file.lfs ? "134" : size);
      if (f.file.lfs) j += ",\"lfs\":{\"sha256\":\"" + f.sha256 + "\",\"size\":" + size + ",\"pointerSize\":134}";
      j += "}";
    }
    response r;
    r.headers.emplace_back("Content-Type", "application/json");
    r.body = j + "]}";
    return r;
  }
};

fake_hub::fake_hub(std::optional<fake_hub_tls> tls) : impl_(std::make_unique<impl>()) {
  if (tls) {
    impl_->tls.emplace(asio::ssl::context::tls_server);
    impl_->tls->use_certificate_chain_file(tls->cert_file);
    impl_->tls->use_private_key_file(tls->key_file, asio::ssl::context::pem);
  }
  impl_->listen(impl_->hub, impl_->hub_port);
  impl_->listen(impl_->cdn, impl_->cdn_port);
  impl_->hub_thread = std::thread([this] { impl_->accept_loop(impl_->hub, false); });
  impl_->cdn_thread = std::thread([this] { impl_->accept_loop(impl_->cdn, true); });
}

fake_hub::~fake_hub() {
  impl_->stopping = true;
  // shutdown() wakes a thread blocked in accept() or read() on Linux.
  ::shutdown(impl_->hub.native_handle(), SHUT_RDWR);
  ::shutdown(impl_->cdn.native_handle(), SHUT_RDWR);
  impl_->hub_thread.join();
  impl_->cdn_thread.join();
  std::vector<std::thread> threads;
  {
    std::lock_guard lock(impl_->mu);
    for (int fd : impl_->open_fds) ::shutdown(fd, SHUT_RDWR);
    threads.swap(impl_->connections);
  }
  for (auto& t : threads) t.join();
}

void fake_hub::add_repo(const std::string& repo, std::vector<fake_hub_file> files) {
  stored_repo r;
  std::string all = repo;
  for (auto& f : files) {
    stored_file s{std::move(f), "", ""};
    s.sha256 = sha256_hex(s.file.bytes);
    s.blob_id = sha256_hex("blob " + s.file.bytes).substr(0, 40);
    all += s.file.name + s.sha256;
    r.files.push_back(std::move(s));
  }
  r.commit = sha256_hex(all).substr(0, 40);
  std::lock_guard lock(impl_->mu);
  impl_->repos[repo] = std::move(r);
}

std::string fake_hub::commit(const std::string& repo) const {
  std::lock_guard lock(impl_->mu);
  return impl_->repos.at(repo).commit;
}

std::string fake_hub::endpoint() const {
  return std::string(impl_->tls ? "https" : "http") + "://127.0.0.1:" + std::to_string(impl_->hub_port);
}

unsigned short fake_hub::port() const { return impl_->hub_port; }

void fake_hub::require_token(std::string token) {
  std::lock_guard lock(impl_->mu);
  impl_->token = std::move(token);
}

void fake_hub::cut_after(const std::string& file, std::uint64_t bytes, int times) {
  std::lock_guard lock(impl_->mu);
  impl_->cuts[file] = {bytes, times};
}

void fake_hub::corrupt(const std::string& file) {
  std::lock_guard lock(impl_->mu);
  impl_->corrupted.push_back(file);
}

void fake_hub::ignore_range(bool on) {
  std::lock_guard lock(impl_->mu);
  impl_->no_range = on;
}

void fake_hub::throttle(std::uint64_t bytes_per_second) {
  std::lock_guard lock(impl_->mu);
  impl_->rate = bytes_per_second;
}

std::vector<fake_hub_request> fake_hub::requests() const {
  std::lock_guard lock(impl_->mu);
  return impl_->log;
}

std::uint64_t fake_hub::bytes_sent(const std::string& file) const {
  std::lock_guard lock(impl_->mu);
  auto it = impl_->sent.find(file);
  return it == impl_->sent.end() ? 0 : it->second;
}

}  // namespace pagedserve::e2e
