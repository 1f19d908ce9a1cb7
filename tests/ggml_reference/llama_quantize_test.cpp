// gguf_recipe against llama-quantize itself: llama.cpp's llama_model_quantize (its prebuilt libllama,
// opened with dlopen beside ggml's libraries) quantizes F32 files this writer made, under every ftype
// it takes without an importance matrix, and every tensor of its output has the type gguf_recipe
// picks for that ftype. A llama (GQA 4, 16 layers), a qwen3 (GQA 2: the rules that need GQA >= 4 do
// not fire) and a qwen3moe (8 experts: the 8-expert bumps; tied embeddings). Which llama.cpp this is:
// the package's _nlcBuildMetadata.json (node-llama-cpp 3.22.1, llama.cpp release v0.5.0 of its fork).
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>

#include "model/ggml_blocks.hpp"
#include "model/gguf.hpp"
#include "model/gguf_random_model.hpp"

namespace pagedserve {
namespace {

// llama.h's llama_ftype numbers of the ftypes gguf_recipe names (Q2_K_S left out: llama.cpp refuses
// it without an importance matrix).
constexpr std::pair<const char*, int> ftypes[] = {
    {"F16", 1},     {"BF16", 32},   {"Q4_0", 2},    {"Q4_1", 3},    {"Q5_0", 8},    {"Q5_1", 9},
    {"Q8_0", 7},    {"Q2_K", 10},   {"Q3_K_S", 11}, {"Q3_K_M", 12}, {"Q3_K_L", 13}, {"Q4_K_S", 14},
    {"Q4_K_M", 15}, {"Q5_K_S", 16}, {"Q5_K_M", 17}, {"Q6_K", 18},   {"IQ4_NL", 25}, {"IQ4_XS", 30}};

// libllama's C entry points. Only the first two fields of llama_model_quantize_params are set
// (int32_t nthread, enum llama_ftype ftype: its ABI since the struct exists); the rest keep
// llama_model_quantize_default_params' values, which returns the struct through a hidden pointer.
class llama_library {
 public:
  llama_library() {
    const char* env = std::getenv("PAGEDSERVE_GGML_LIB_DIR");
    const std::filesystem::path dir = env ? env : PAGEDSERVE_GGML_LIB_DIR;
    std::error_code absent;
    for (const auto& e : std::filesystem::directory_iterator(dir, absent))
      if (e.path().filename().string().starts_with("libllama.")) handle_ = dlopen(e.path().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) return;
    defaults_ = reinterpret_cast<void (*)(void*)>(dlsym(handle_, "llama_model_quantize_default_params"));
    quantize_ = reinterpret_cast<std::uint32_t (*)(const char*, const char*, const void*)>(
        dlsym(handle_, "llama_model_quantize"));
    const auto init = reinterpret_cast<void (*)()>(dlsym(handle_, "llama_backend_init"));
    const auto log_set = reinterpret_cast<void (*)(void (*)(int, const char*, void*), void*)>(
        dlsym(handle_, "llama_log_set"));
    if (init) init();
    if (log_set) log_set([](int, const char*, void*) {}, nullptr);  // its per-tensor lines
  }
  ~llama_library() {
    if (handle_) dlclose(handle_);
  }
  llama_library(const llama_library&) = delete;
  llama_library& operator=(const llama_library&) = delete;

  bool ok() const { return defaults_ && quantize_; }

  bool quantize(const std::filesystem::path& in, const std::filesystem::path& out, int ftype) const {
    alignas(16) std::byte params[512] = {};  // larger than any version's struct
    defaults_(params);
    const std::int32_t n_threads = 2;
    std::memcpy(params, &n_threads, 4);
    std::memcpy(params + 4, &ftype, 4);
    return quantize_(in.c_str(), out.c_str(), params) == 0;
  }

 private:
  void* handle_ = nullptr;
  void (*defaults_)(void*) = nullptr;
  std::uint32_t (*quantize_)(const char*, const char*, const void*) = nullptr;
};

std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("pagedserve_" + std::to_string(::getpid()) + "_" + name);
}

// The smallest widths that tile 256-weight blocks. The llama takes every ftype (16 layers: the first
// 16th, eighth and use_more_bits all fire); the others, to stay fast (llama.cpp's IQ4 and k-quant
// searches take most of the time), the ftypes whose rules their shape changes.
struct case_shape {
  model_config config;
  std::vector<std::string> ftypes;  // empty: all
};

case_shape shape_of(const std::string& architecture) {
  case_shape s;
  model_config& c = s.config;
  c.architecture = architecture;
  c.dim = 256, c.hidden_dim = 256, c.n_layers = 16, c.n_heads = 4, c.n_kv_heads = 1, c.head_dim = 64;
  c.vocab_size = 256, c.seq_len = 64, c.shared_classifier = false;
  if (architecture == "qwen3") {  // GQA 2: attn_v keeps the Q2_K/IQ4 defaults
    c.n_layers = 8, c.n_kv_heads = 2;
    s.ftypes = {"Q2_K", "Q3_K_M", "Q4_K_S", "IQ4_NL"};
  }
  if (architecture == "qwen3moe") {  // 8 experts, tied
    c.n_layers = 2, c.shared_classifier = true;
    c.n_experts = 8, c.n_experts_used = 2, c.expert_hidden_dim = 256, c.norm_topk_prob = true;
    s.ftypes = {"Q2_K", "Q3_K_M", "Q3_K_L", "Q4_K_M", "Q5_K_M", "Q6_K", "IQ4_XS"};
  }
  return s;
}

class llama_quantize : public testing::TestWithParam<std::string> {};

TEST_P(llama_quantize, gives_every_tensor_the_recipes_type) {
  const llama_library llama;
  if (!llama.ok()) GTEST_SKIP() << "llama.cpp's libllama is not installed (npm ci in tests/ggml_reference)";
  const case_shape shape = shape_of(GetParam());
  const model_config& c = shape.config;
  const auto f32_path = temp_file(c.architecture + "_f32_for_llama_quantize.gguf");
  gguf_writer w;
  gguf_add_random_model(w, c, *gguf_recipe_parse("F32"), 5);
  ASSERT_TRUE(w.write(f32_path).has_value());
  for (const auto& [ftype, number] : ftypes) {
    if (!shape.ftypes.empty() && std::find(shape.ftypes.begin(), shape.ftypes.end(), ftype) == shape.ftypes.end())
      continue;
    SCOPED_TRACE(ftype);
    const auto out = temp_file(c.architecture + "_llama_quantize_" + ftype + ".gguf");
    ASSERT_TRUE(llama.quantize(f32_path, out, number));
    auto file = gguf_file::open(out);
    ASSERT_TRUE(file.has_value()) << file.error();
    const gguf_recipe recipe = *gguf_recipe_parse(ftype);
    const gguf_recipe_model m = gguf_recipe_model_of(c);
    int n_checked = 0;
    for (const gguf_tensor_info& t : file->tensors()) {
      const dtype ours = gguf_recipe_type(recipe, m, t.name, t.ne);
      EXPECT_EQ(gguf_tensor_type_name(t.type), gguf_tensor_type_name(*ggml_type_of(ours))) << t.name;
      ++n_checked;
    }
    EXPECT_GT(n_checked, 3 * c.n_layers);
    std::filesystem::remove(out);
  }
  std::filesystem::remove(f32_path);
}

INSTANTIATE_TEST_SUITE_P(all, llama_quantize, testing::Values("llama", "qwen3", "qwen3moe"),
                         [](const testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace pagedserve
