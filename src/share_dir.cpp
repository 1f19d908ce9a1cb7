#include "share_dir.hpp"

namespace pagedserve {

std::optional<std::filesystem::path> share_dir_for(const std::filesystem::path& exe) {
  const std::filesystem::path bin = exe.parent_path();
  std::error_code ec;
  for (const std::filesystem::path& candidate : {bin / ".." / "share" / "pagedserve", bin / "share" / "pagedserve"})
    if (std::filesystem::is_directory(candidate, ec)) return std::filesystem::weakly_canonical(candidate, ec);
  return std::nullopt;
}

std::optional<std::filesystem::path> share_dir_find() {
  std::error_code ec;
  const std::filesystem::path exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return std::nullopt;
  return share_dir_for(exe);
}

}  // namespace pagedserve
