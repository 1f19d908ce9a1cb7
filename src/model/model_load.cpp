// Chooses the loader for a path by what it holds.
#include "model/model_load.hpp"

#include <cstring>
#include <fstream>

#include "model/load_phase.hpp"
#include "model/gguf_model.hpp"
#include "model/hf_model.hpp"

namespace pagedserve {

std::expected<std::shared_ptr<const model>, std::string> model_load_any(const std::filesystem::path& path,
                                                                        const model_load_options& options) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return hf_model_load(path, options);
  if (!std::filesystem::exists(path, ec)) return std::unexpected(path.string() + ": no such file or directory");
  if (path.filename() == "config.json" || path.extension() == ".safetensors")
    return hf_model_load(path.parent_path().empty() ? std::filesystem::path(".") : path.parent_path(), options);

  char magic[4] = {};
  std::ifstream in(path, std::ios::binary);
  in.read(magic, sizeof magic);
  if (in.gcount() == 4 && std::memcmp(magic, "GGUF", 4) == 0) return gguf_model_load(path, options);

  load_phase phase("mapping the llama2.c checkpoint");
  auto m = llama2c_model_load(path);
  if (!m) return m;
  const model_config& c = (*m)->config;
  phase.finish(fmt::format("mapped llama2.c checkpoint {}, {} (dim {}, {} layers, vocab {}),", path.filename().string(),
                           bytes_text(std::filesystem::file_size(path, ec)), c.dim, c.n_layers, c.vocab_size));
  if (options.weights == weight_format::as_stored || options.weights == weight_format::f32) return m;
  auto converted = std::make_shared<model>(**m);  // shares the mapping through storage
  model_convert_weights(*converted, options.weights, options.progress);
  return converted;
}

}  // namespace pagedserve
