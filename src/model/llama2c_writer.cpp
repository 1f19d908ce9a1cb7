// Writes synthetic llama2.c checkpoints: the real file format with random weights, for tests and benchmarks.
#include <fstream>

#include "pagedserve/model.hpp"

namespace pagedserve {

std::expected<void, std::string> llama2c_write_random(const std::filesystem::path& path, const model_config& config,
                                                      std::uint64_t seed) {
  const std::vector<float> words = llama2c_random_checkpoint(config, seed);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return std::unexpected(path.string() + ": cannot create");
  out.write(reinterpret_cast<const char*>(words.data()), static_cast<std::streamsize>(words.size() * sizeof(float)));
  if (!out) return std::unexpected(path.string() + ": write failed");
  return {};
}

}  // namespace pagedserve
