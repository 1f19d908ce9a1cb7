#include "support/test_paths.hpp"

namespace pagedserve::test {

std::filesystem::path shared_dir() {
  std::filesystem::path p{PAGEDSERVE_SHARED_DIR};
  return std::filesystem::is_directory(p) ? p : std::filesystem::path{};
}

std::filesystem::path shared_model(const std::string& name) {
  const auto dir = shared_dir();
  if (dir.empty()) return {};
  auto p = dir / "models" / name;
  return std::filesystem::exists(p) ? p : std::filesystem::path{};
}

std::filesystem::path server_binary() { return PAGEDSERVE_BINARY; }

}  // namespace pagedserve::test
