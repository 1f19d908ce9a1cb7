#include "hub/hub_download.hpp"

#include <simdjson.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <numeric>

#include "hub/hub_cache.hpp"
#include "hub/hub_client.hpp"
#include "hub/hub_file_download.hpp"
#include "hub/hub_url.hpp"

namespace pagedserve {
namespace {

namespace fs = std::filesystem;

struct revision_info {
  std::string commit;
  std::vector<hub_file> files;
};

struct fetch_error {
  std::string message;
  bool unreachable = false;  // no answer at all (network), as opposed to an HTTP error
};

// A path inside the repo that stays inside the snapshot folder: relative, no "." or ".." part.
bool hub_repo_path_safe(std::string_view name) {
  if (name.empty() || name.starts_with('/') || name.find('\\') != std::string_view::npos) return false;
  for (std::size_t start = 0; start <= name.size();) {
    const std::size_t end = std::min(name.find('/', start), name.size());
    const std::string_view part = name.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    start = end + 1;
  }
  return true;
}

std::expected<revision_info, std::string> parse_revision_info(const std::string& body) {
  simdjson::dom::parser parser;
  simdjson::dom::element root;
  if (parser.parse(body).get(root) != simdjson::SUCCESS) return std::unexpected("the hub's answer is not JSON");
  revision_info info;
  std::string_view sha;
  if (root["sha"].get(sha) != simdjson::SUCCESS || !hub_commit_hash_is(sha))
    return std::unexpected("the hub's answer has no commit sha");
  info.commit = std::string(sha);
  simdjson::dom::array siblings;
  if (root["siblings"].get(siblings) != simdjson::SUCCESS) return std::unexpected("the hub's answer lists no files");
  for (simdjson::dom::element s : siblings) {
    hub_file f;
    std::string_view text;
    if (s["rfilename"].get(text) != simdjson::SUCCESS) continue;
    f.name = std::string(text);
    if (!hub_repo_path_safe(f.name)) continue;  // never written outside the snapshot
    std::uint64_t n = 0;
    if (s["size"].get(n) == simdjson::SUCCESS) f.size = n;
    if (s["blobId"].get(text) == simdjson::SUCCESS) f.blob_id = std::string(text);
    simdjson::dom::object lfs;
    if (s["lfs"].get(lfs) == simdjson::SUCCESS) {
      if (lfs["sha256"].get(text) == simdjson::SUCCESS) f.sha256 = std::string(text);
      if (lfs["size"].get(n) == simdjson::SUCCESS) f.size = n;
    }
    info.files.push_back(std::move(f));
  }
  return info;
}

std::expected<revision_info, fetch_error> fetch_revision(const hub_model_ref& ref, const std::string& revision,
                                                         const hub_settings& s) {
  const std::string url =
      s.endpoint + "/api/models/" + ref.repo + "/revision/" + hub_url_quote(revision, false) + "?blobs=true";
  const std::string what = ref.repo + " (revision " + revision + ")";
  auto r = hub_http_get(url, hub_request_headers(s), hub_http_options_from(s));
  if (!r) return std::unexpected(fetch_error{"cannot reach the hub at " + s.endpoint + ": " + r.error(), true});
  if (r->final_hop().status != 200)
    return std::unexpected(fetch_error{hub_status_message(r->final_hop(), what, s, r->body->read_text())});
  const std::string body = r->body->read_text(64 << 20);
  auto info = parse_revision_info(body);
  if (!info) return std::unexpected(fetch_error{what + ": " + info.error() + " (" + url + ")"});
  return std::move(*info);
}

// The files of a cached snapshot, listed as the hub would list them.
std::vector<hub_file> snapshot_files(const fs::path& dir) {
  std::vector<hub_file> files;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (fs::is_regular_file(it->path(), ec))  // follows the symlink: a dangling one is not a file
      files.push_back(hub_file{it->path().lexically_relative(dir).generic_string(), {}, {}, {}});
  std::sort(files.begin(), files.end(), [](const hub_file& a, const hub_file& b) { return a.name < b.name; });
  return files;
}

std::expected<fs::path, std::string> from_cache(const hub_cache& cache, const hub_model_ref& ref,
                                                const std::string& revision, const std::string& why) {
  const auto commit = cache.commit_for(ref.repo, revision);
  const fs::path snapshot = commit ? cache.snapshot(ref.repo, *commit) : fs::path();
  if (!commit || !fs::is_directory(snapshot))
    return std::unexpected(ref.repo + " (revision " + revision + ") is not in the Hugging Face cache " +
                           cache.root().string() + ", and " + why);
  auto selected = hub_files_select(snapshot_files(snapshot), ref);
  if (!selected) return std::unexpected("in the cache " + snapshot.string() + ": " + selected.error() + "; and " + why);
  spdlog::info("{}: using the cached snapshot {} (revision {})", ref.repo, snapshot.string(), revision);
  return selected->gguf.empty() ? snapshot : snapshot / selected->gguf;
}

}  // namespace

bool hub_model_wanted(const std::string& model) {
  std::error_code ec;
  return !model.empty() && !fs::exists(model, ec) && hub_model_ref_parse(model).has_value();
}

std::expected<fs::path, std::string> hub_model_fetch(const hub_model_ref& ref, const std::string& revision,
                                                     const hub_settings& settings, download_progress& progress) {
  const hub_cache cache(settings.cache_dir);
  if (settings.offline) return from_cache(cache, ref, revision, "HF_HUB_OFFLINE is set (no network)");
  auto info = fetch_revision(ref, revision, settings);
  if (!info) {
    if (!info.error().unreachable) return std::unexpected(info.error().message);
    auto cached = from_cache(cache, ref, revision, info.error().message);
    if (cached) spdlog::warn("{}; using the cache", info.error().message);
    return cached;
  }
  auto selected = hub_files_select(info->files, ref);
  if (!selected) return std::unexpected(selected.error());
  if (auto w = cache.write_ref(ref.repo, revision, info->commit); !w) return std::unexpected(w.error());
  std::vector<const hub_file*> missing;
  for (const hub_file& f : selected->files)
    if (!fs::exists(cache.pointer(ref.repo, info->commit, f.name))) missing.push_back(&f);
  const std::uint64_t bytes = std::accumulate(missing.begin(), missing.end(), std::uint64_t{0},
                                              [](std::uint64_t n, const hub_file* f) { return n + f->size.value_or(0); });
  if (missing.empty())
    spdlog::info("{}: revision {} (commit {}) is in the cache", ref.repo, revision, info->commit);
  else
    spdlog::info("{}: revision {} is commit {}: fetching {} of {} files ({}) into {}", ref.repo, revision, info->commit,
                 missing.size(), selected->files.size(), progress_bytes(bytes), cache.repo_dir(ref.repo).string());
  for (const hub_file* f : missing)
    if (auto d = hub_file_download(cache, settings, ref.repo, info->commit, *f, progress); !d)
      return std::unexpected(d.error());
  const fs::path snapshot = cache.snapshot(ref.repo, info->commit);
  return selected->gguf.empty() ? snapshot : snapshot / selected->gguf;
}

std::expected<fs::path, std::string> hub_model_fetch(const std::string& model, const std::string& revision) {
  const auto ref = hub_model_ref_parse(model);
  if (!ref) return std::unexpected("'" + model + "' is neither a local path nor a hub repo id (org/name[:TAG])");
  download_progress progress = download_progress::for_stderr();
  auto path = hub_model_fetch(*ref, revision, hub_settings_from_env(), progress);
  if (!path) return std::unexpected("--model " + model + " is not a local path, and fetching it from the hub failed: " + path.error());
  return path;
}

}  // namespace pagedserve
