#pragma once
// One entry point for every model format, chosen by content rather than by file name.
#include <expected>
#include <filesystem>
#include <memory>
#include <string>

#include "pagedserve/model.hpp"

namespace pagedserve {

// A directory (or a config.json / *.safetensors inside one) -> Hugging Face folder (hf_model_load);
// a file starting with the GGUF magic -> GGUF (gguf_model_load); any other file -> llama2.c checkpoint. options.weights applies to every format.
std::expected<std::shared_ptr<const model>, std::string> model_load_any(const std::filesystem::path& path,
                                                                        const model_load_options& options = {});

}  // namespace pagedserve
