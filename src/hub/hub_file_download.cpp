#include "hub/hub_file_download.hpp"

#include <spdlog/spdlog.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <vector>

#include "hub/hub_url.hpp"
#include "hub/sha256.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

constexpr int max_attempts = 6;  // requests per file: resumes after dropped connections, one restart

std::uint64_t size_or_zero(const fs::path& p) {
  std::error_code ec;
  const auto n = fs::file_size(p, ec);
  return ec ? 0 : n;
}

// The response huggingface_hub reads a file's metadata from: relative redirects (a renamed repo,
// the hub's resolve cache) are followed, an absolute one (the CDN) is where the metadata stops.
const hub_http_hop& metadata_hop(const std::vector<hub_http_hop>& hops) {
  for (const hub_http_hop& hop : hops)
    if (!hop.redirect() || !hub_location_is_relative(hop.header("location"))) return hop;
  return hops.back();
}

bool sha256_hex_is(std::string_view s) {
  return s.size() == 64 && s.find_first_not_of("0123456789abcdef") == std::string_view::npos;
}

struct file_closer {
  void operator()(std::FILE* f) const { std::fclose(f); }
};

}  // namespace

hub_headers hub_request_headers(const hub_settings& s) {
  hub_headers h = {{"User-Agent", "pagedserve/" PAGEDSERVE_VERSION}, {"Accept-Encoding", "identity"}};
  if (!s.token.empty()) h.emplace_back("Authorization", "Bearer " + s.token);
  return h;
}

hub_http_options hub_http_options_from(const hub_settings& s) {
  hub_http_options o;
  o.connect_timeout = s.connect_timeout;
  o.read_timeout = s.read_timeout;
  return o;
}

std::string hub_status_message(const hub_http_hop& hop, const std::string& what, const hub_settings& s,
                               const std::string& body) {
  const std::string code = hop.header("x-error-code");
  std::string detail = hop.header("x-error-message");
  if (detail.empty() && body.size() < 300 && body.find('<') == std::string::npos) detail = body;
  const std::string said = detail.empty() ? "" : " (" + detail + ")";
  const std::string url = hop.url.substr(0, hop.url.find('?'));  // a CDN URL's query is its signature
  const std::string token_hint =
      s.token.empty() ? "no token was sent: set HF_TOKEN (or put one in $HF_HOME/token, as `huggingface-cli login` does)"
                      : "the token sent (HF_TOKEN or $HF_HOME/token) was refused or has no access to it";
  switch (hop.status) {
    case 401:
      return what + ": 401 Unauthorized from " + url + said +
             ": the repository is private or gated, or does not exist; " + token_hint;
    case 403:
      return what + ": 403 Forbidden from " + url + said + ": " + token_hint +
             " (a gated model also needs its terms accepted on its hub page)";
    case 404:
      if (code == "RevisionNotFound") return what + ": revision not found" + said;
      if (code == "EntryNotFound") return what + ": file not found in the repository" + said;
      return what + ": 404 Not Found at " + url + said + " (check the repository id and --revision)";
    default:
      return what + ": HTTP " + std::to_string(hop.status) + " from " + url + said;
  }
}

namespace {

// One file's download, request after request: a dropped connection resumes where it stopped, a
// Range the server ignored or answered elsewhere starts over. One blob's lock is held throughout.
class file_fetch {
 public:
  file_fetch(const hub_cache& cache, const hub_settings& s, const std::string& repo, const std::string& commit,
             const hub_file& file, download_progress& progress)
      : cache_(cache), s_(s), repo_(repo), commit_(commit), file_(file), progress_(progress),
        what_(repo + "/" + file.name), etag_(file.expected_etag().value_or("")) {}

  std::expected<void, std::string> run() {
    if (!etag_.empty()) {
      if (auto l = lock_for(etag_); !l) return l;
      if (fs::exists(cache_.blob(repo_, etag_))) return link();  // the same bytes as in another revision
    }
    for (int attempt = 1; attempt <= max_attempts; ++attempt) {
      auto step = request(attempt);
      if (!step) return std::unexpected(step.error());
      if (*step == outcome::done) return {};
    }
    return std::unexpected(what_ + ": giving up after " + std::to_string(max_attempts) + " attempts");
  }

 private:
  enum class outcome { done, again };
  static std::expected<outcome, std::string> done_if(const std::expected<void, std::string>& r) {
    if (!r) return std::unexpected(r.error());
    return outcome::done;
  }

  std::expected<void, std::string> link() { return cache_.link(repo_, commit_, file_.name, etag_); }
  fs::path part() const { return cache_.incomplete(repo_, etag_); }

  std::expected<void, std::string> lock_for(const std::string& etag) {
    if (locked_ == etag) return {};
    lock_.reset();
    auto l = hub_file_lock::acquire(cache_.lock(repo_, etag));
    if (!l) return std::unexpected(l.error());
    lock_.emplace(std::move(*l));
    locked_ = etag;
    return {};
  }

  // GET the file (from the partial blob's end when there is one) and receive it.
  std::expected<outcome, std::string> request(int attempt) {
    const std::string url = s_.endpoint + "/" + repo_ + "/resolve/" + commit_ + "/" + hub_url_quote(file_.name, true);
    const std::uint64_t offset = etag_.empty() ? 0 : size_or_zero(part());
    hub_headers headers = hub_request_headers(s_);
    if (offset > 0) headers.emplace_back("Range", "bytes=" + std::to_string(offset) + "-");
    auto r = hub_http_get(url, headers, hub_http_options_from(s_));
    if (!r) return std::unexpected(what_ + ": " + r.error());
    const hub_http_hop& fin = r->final_hop();
    if (fin.status != 200 && fin.status != 206)
      return std::unexpected(hub_status_message(fin, what_, s_, r->body->read_text()));
    const hub_http_hop& meta = metadata_hop(r->hops);
    std::string answered = hub_etag_normalize(meta.header("x-linked-etag"));
    if (answered.empty()) answered = hub_etag_normalize(meta.header("etag"));
    if (answered.empty()) return std::unexpected(what_ + ": the hub sent no ETag, so the file cannot be cached");
    if (answered.starts_with('.') ||  // it names a file in blobs/
        answered.find_first_not_of("0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ-_.") != std::string::npos)
      return std::unexpected(what_ + ": the hub sent an ETag that cannot name a cache file: " + answered);
    if (const auto c = meta.header("x-repo-commit"); !c.empty() && c != commit_)
      return std::unexpected(what_ + ": the hub answered for commit " + c + ", not " + commit_);
    if (answered != etag_) {  // the listing did not name the blob, or named another one
      if (auto l = lock_for(answered); !l) return std::unexpected(l.error());
      etag_ = answered;
      if (fs::exists(cache_.blob(repo_, etag_))) return done_if(link());
      if (offset > 0 || size_or_zero(part()) > 0) return outcome::again;  // ask again with the right Range
    }
    std::optional<std::uint64_t> announced = header_u64(meta.header("x-linked-size"));
    if (!announced && &meta == &fin) announced = header_u64(fin.header("content-length"));
    std::uint64_t start = 0;
    if (fin.status == 206) {
      const auto range = content_range_parse(fin.header("content-range"));
      if (!range || range->first != offset) {
        spdlog::warn("{}: the server resumed at another offset ({}); starting over", what_, fin.header("content-range"));
        fs::remove(part());
        return outcome::again;
      }
      start = offset;
      if (range->total && !announced) announced = range->total;
    } else if (offset > 0) {
      spdlog::warn("{}: the server ignored the Range request (200, not 206): downloading from the start", what_);
    }
    if (file_.size && announced && *file_.size != *announced)
      return std::unexpected(what_ + ": the listing says " + std::to_string(*file_.size) + " bytes, the download " +
                             std::to_string(*announced));
    return receive(*r->body, start, file_.size ? file_.size : announced, attempt);
  }

  // Appends the body to the partial blob (from `start`), then checks and installs it.
  std::expected<outcome, std::string> receive(hub_http_body& body, std::uint64_t start,
                                              std::optional<std::uint64_t> total, int attempt) {
    fs::create_directories(part().parent_path());
    std::unique_ptr<std::FILE, file_closer> out(std::fopen(part().c_str(), start > 0 ? "ab" : "wb"));
    if (!out) return std::unexpected("cannot write " + part().string());
    sha256_hasher hash;
    if (start > 0)
      if (auto h = sha256_update_from_file(hash, part(), start); !h) return std::unexpected(h.error());
    std::vector<char> buf(1 << 20);
    progress_.start(file_.name, total.value_or(0), start);
    std::uint64_t done = start;
    std::string failed;
    for (;;) {
      auto n = body.read(buf);
      if (!n) failed = n.error();
      if (!n || *n == 0) break;
      if (std::fwrite(buf.data(), 1, *n, out.get()) != *n) {
        failed = "cannot write " + part().string() + " (disk full?)";
        break;
      }
      hash.update(buf.data(), *n);
      done += *n;
      progress_.advance(*n);
    }
    progress_.finish();
    if (std::fflush(out.get()) != 0) return std::unexpected("cannot write " + part().string() + " (disk full?)");
    out.reset();
    if (!failed.empty()) {
      if (done > start && attempt < max_attempts) {  // it moved: resume where it stopped
        spdlog::warn("{}: {}; resuming at byte {}", what_, failed, done);
        return outcome::again;
      }
      return std::unexpected(what_ + ": download failed: " + failed + "; the " + std::to_string(done) +
                             " bytes received are kept in " + part().string() + " and the next start resumes there");
    }
    return done_if(install(done, total, hash.hex_digest()));
  }

  // Size and SHA-256 checked (a bad file is deleted: resuming it would keep the bad bytes), then
  // the partial blob becomes the blob and the snapshot links to it.
  std::expected<void, std::string> install(std::uint64_t done, std::optional<std::uint64_t> total,
                                           const std::string& digest) {
    if (total && done != *total) {
      fs::remove(part());
      return std::unexpected(what_ + ": received " + std::to_string(done) + " bytes, expected " +
                             std::to_string(*total) + "; the file was deleted, start again to download it anew");
    }
    // LFS files carry their SHA-256 in the listing, and as their ETag.
    const std::optional<std::string> want = file_.sha256 ? file_.sha256 : sha256_hex_is(etag_) ? std::optional(etag_) : std::nullopt;
    if (want && digest != *want) {
      fs::remove(part());
      return std::unexpected(what_ + ": SHA-256 mismatch (expected " + *want + ", got " + digest +
                             "): the file is corrupt and was deleted; start again to download it anew");
    }
    std::error_code ec;
    fs::rename(part(), cache_.blob(repo_, etag_), ec);
    if (ec) return std::unexpected("cannot move " + part().string() + " into place: " + ec.message());
    return link();
  }

  const hub_cache& cache_;
  const hub_settings& s_;
  const std::string& repo_;
  const std::string& commit_;
  const hub_file& file_;
  download_progress& progress_;
  const std::string what_;  // repo/file, for messages
  std::string etag_;        // the blob's name: expected from the listing, then as the hub answered
  std::optional<hub_file_lock> lock_;
  std::string locked_;      // the etag lock_ is for
};

}  // namespace

std::expected<void, std::string> hub_file_download(const hub_cache& cache, const hub_settings& s,
                                                   const std::string& repo, const std::string& commit,
                                                   const hub_file& file, download_progress& progress) {
  return file_fetch(cache, s, repo, commit, file, progress).run();
}

}  // namespace pagedserve
