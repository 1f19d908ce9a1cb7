#include "hub/hub_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace pagedserve {

namespace fs = std::filesystem;

bool hub_commit_hash_is(std::string_view revision) {
  return revision.size() == 40 &&
         std::all_of(revision.begin(), revision.end(), [](char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); });
}

fs::path hub_cache::repo_dir(std::string_view repo) const {
  std::string name = "models";
  std::size_t start = 0;
  for (std::size_t slash; (slash = repo.find('/', start)) != std::string_view::npos; start = slash + 1)
    name += "--" + std::string(repo.substr(start, slash - start));
  return root_ / (name + "--" + std::string(repo.substr(start)));
}

fs::path hub_cache::blob(std::string_view repo, std::string_view etag) const {
  return repo_dir(repo) / "blobs" / std::string(etag);
}

fs::path hub_cache::incomplete(std::string_view repo, std::string_view etag) const {
  return repo_dir(repo) / "blobs" / (std::string(etag) + ".incomplete");
}

fs::path hub_cache::snapshot(std::string_view repo, std::string_view commit) const {
  return repo_dir(repo) / "snapshots" / std::string(commit);
}

fs::path hub_cache::pointer(std::string_view repo, std::string_view commit, std::string_view file) const {
  return snapshot(repo, commit) / fs::path(std::string(file)).relative_path();
}

fs::path hub_cache::lock(std::string_view repo, std::string_view etag) const {
  return root_ / ".locks" / repo_dir(repo).filename() / (std::string(etag) + ".lock");
}

std::optional<std::string> hub_cache::commit_for(std::string_view repo, std::string_view revision) const {
  if (hub_commit_hash_is(revision)) return std::string(revision);
  std::ifstream in(repo_dir(repo) / "refs" / std::string(revision));
  std::string commit;
  if (!in || !std::getline(in, commit)) return std::nullopt;
  while (!commit.empty() && std::isspace(static_cast<unsigned char>(commit.back()))) commit.pop_back();
  return hub_commit_hash_is(commit) ? std::optional(commit) : std::nullopt;
}

std::expected<void, std::string> hub_cache::write_ref(std::string_view repo, std::string_view revision,
                                                      std::string_view commit) const {
  if (revision == commit || commit_for(repo, revision) == std::string(commit)) return {};
  const fs::path ref = repo_dir(repo) / "refs" / std::string(revision);
  std::error_code ec;
  fs::create_directories(ref.parent_path(), ec);
  std::ofstream out(ref, std::ios::binary | std::ios::trunc);
  out << commit;  // no newline: huggingface_hub writes and reads the bare hash
  if (!out.flush()) return std::unexpected("cannot write " + ref.string());
  return {};
}

std::expected<void, std::string> hub_cache::link(std::string_view repo, std::string_view commit, std::string_view file,
                                                 std::string_view etag) const {
  const fs::path dst = pointer(repo, commit, file);
  std::error_code ec;
  fs::create_directories(dst.parent_path(), ec);
  if (ec) return std::unexpected("cannot create " + dst.parent_path().string() + ": " + ec.message());
  const fs::path target = blob(repo, etag).lexically_relative(dst.parent_path());
  fs::remove(dst, ec);
  fs::create_symlink(target, dst, ec);
  if (ec) return std::unexpected("cannot link " + dst.string() + " -> " + target.string() + ": " + ec.message());
  return {};
}

std::expected<hub_file_lock, std::string> hub_file_lock::acquire(const fs::path& path) {
  std::error_code ec;
  fs::create_directories(path.parent_path(), ec);
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) return std::unexpected("cannot open lock " + path.string() + ": " + std::strerror(errno));
  while (::flock(fd, LOCK_EX) != 0) {
    if (errno == EINTR) continue;
    const std::string why = std::strerror(errno);
    ::close(fd);
    return std::unexpected("cannot lock " + path.string() + ": " + why);
  }
  return hub_file_lock(fd);
}

hub_file_lock::~hub_file_lock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace pagedserve
