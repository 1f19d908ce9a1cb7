// A Hugging Face folder's config.json and generation_config.json: every problem must be an error
// naming the field, never a crash, whatever the numbers (zero heads, huge sizes, wrong types).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "model/hf_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view json(reinterpret_cast<const char*>(data), size);
  auto parsed = pagedserve::hf::config_parse(json);
  pagedserve::generation_defaults defaults;
  (void)pagedserve::hf::generation_config_parse(json, parsed ? parsed->generation : defaults);
  return 0;
}
