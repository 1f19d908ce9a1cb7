#include "support/test_paths.hpp"

#include <cstdlib>

namespace pagedserve::test {

namespace fs = std::filesystem;

fs::path shared_dir() {
  const char* env = std::getenv("PAGEDSERVE_SHARED_DIR");
  const fs::path p = env && *env ? fs::path{env} : fs::path{PAGEDSERVE_SHARED_DIR};
  return fs::is_directory(p) ? p : fs::path{};
}

fs::path data_file(std::string_view relative) {
  if (auto in_repo = fs::path{PAGEDSERVE_TEST_DATA_DIR} / relative; fs::exists(in_repo)) return in_repo;
  const fs::path shared = shared_dir();
  if (shared.empty()) return {};
  auto p = shared / relative;
  return fs::exists(p) ? p : fs::path{};
}

fs::path model_file(std::string_view name) { return data_file("models/" + std::string(name)); }

fs::path tokenizer_dir(std::string_view name) { return data_file("models/tokenizers/" + std::string(name)); }

fs::path tokenizer_golden(std::string_view name) {
  if (auto own = data_file("golden/tokenizers_" + std::string(name) + ".json"); !own.empty()) return own;
  return data_file("golden/tokenizers.json");
}

fs::path server_binary() { return PAGEDSERVE_BINARY; }

}  // namespace pagedserve::test
