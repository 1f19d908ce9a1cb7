#pragma once
// The Hugging Face cache layout, exactly as huggingface_hub writes it, so either tool reuses what the
// other fetched:
//   <root>/models--{org}--{name}/blobs/{etag}                 the files' bytes, named by ETag
//   <root>/models--{org}--{name}/blobs/{etag}.incomplete      a download in progress (resumable)
//   <root>/models--{org}--{name}/snapshots/{commit}/{file}    relative symlinks to the blobs
//   <root>/models--{org}--{name}/refs/{revision}              the commit a branch or tag pointed at
//   <root>/.locks/models--{org}--{name}/{etag}.lock           flock()ed while a blob is written
#include <expected>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace pagedserve {

// A 40-digit lower-case hex git commit id: such a revision needs no ref.
bool hub_commit_hash_is(std::string_view revision);

class hub_cache {
 public:
  explicit hub_cache(std::filesystem::path root) : root_(std::move(root)) {}
  const std::filesystem::path& root() const { return root_; }

  std::filesystem::path repo_dir(std::string_view repo) const;  // models--org--name
  std::filesystem::path blob(std::string_view repo, std::string_view etag) const;
  std::filesystem::path incomplete(std::string_view repo, std::string_view etag) const;
  std::filesystem::path snapshot(std::string_view repo, std::string_view commit) const;
  std::filesystem::path pointer(std::string_view repo, std::string_view commit, std::string_view file) const;
  std::filesystem::path lock(std::string_view repo, std::string_view etag) const;

  // The commit a revision names: itself when it is a commit hash, else refs/{revision}'s content.
  std::optional<std::string> commit_for(std::string_view repo, std::string_view revision) const;
  // Records refs/{revision} = commit (nothing for a commit hash, nor when it already says so).
  std::expected<void, std::string> write_ref(std::string_view repo, std::string_view revision,
                                             std::string_view commit) const;
  // snapshots/{commit}/{file} -> ../../blobs/{etag} (one more ../ per folder in file), replacing
  // whatever was there.
  std::expected<void, std::string> link(std::string_view repo, std::string_view commit, std::string_view file,
                                        std::string_view etag) const;

 private:
  std::filesystem::path root_;
};

// Holds an exclusive flock() on a lock file while a blob is written (huggingface_hub's FileLock is
// flock too, so the two never write the same blob at once).
class hub_file_lock {
 public:
  static std::expected<hub_file_lock, std::string> acquire(const std::filesystem::path& path);
  hub_file_lock(hub_file_lock&& o) noexcept : fd_(std::exchange(o.fd_, -1)) {}
  hub_file_lock& operator=(hub_file_lock&&) = delete;
  ~hub_file_lock();

 private:
  explicit hub_file_lock(int fd) : fd_(fd) {}
  int fd_ = -1;
};

}  // namespace pagedserve
