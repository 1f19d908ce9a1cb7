#pragma once
// llama.cpp's libllama (the prebuilt CPU build node-llama-cpp ships: tests/ggml_reference/package.json),
// opened with dlopen: llama-quantize's llama_model_quantize, and its logits, teacher forced, over a
// GGUF file. Which llama.cpp this is: the package's _nlcBuildMetadata.json and llama/llama.cpp.info.json
// (node-llama-cpp 3.22.1, llama.cpp release v0.5.0 of its fork).
//
// Structs passed by value (llama_model_params, llama_context_params, llama_model_quantize_params) are
// taken from libllama's own *_default_params into buffers larger than any version's struct: they are
// returned through a hidden pointer and passed in memory, so only the fields this file sets must sit
// where it writes them. It checks the defaults it expects around them first and refuses (ok() false,
// why() says) a libllama whose layout differs, rather than writing into the wrong field.
#include <dlfcn.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace pagedserve::test {

// llama.h's llama_ftype numbers of the ftypes gguf_recipe names (Q2_K_S left out: llama.cpp refuses
// it without an importance matrix).
constexpr std::pair<const char*, int> llama_ftypes[] = {
    {"F16", 1},     {"BF16", 32},   {"Q4_0", 2},    {"Q4_1", 3},    {"Q5_0", 8},    {"Q5_1", 9},
    {"Q8_0", 7},    {"Q2_K", 10},   {"Q3_K_S", 11}, {"Q3_K_M", 12}, {"Q3_K_L", 13}, {"Q4_K_S", 14},
    {"Q4_K_M", 15}, {"Q5_K_S", 16}, {"Q5_K_M", 17}, {"Q6_K", 18},   {"IQ4_NL", 25}, {"IQ4_XS", 30}};
constexpr int llama_ftype_all_f32 = 0;

// A path in the temporary directory no other test process uses.
inline std::filesystem::path temp_file(const std::string& name) {
  return std::filesystem::temp_directory_path() / ("pagedserve_" + std::to_string(::getpid()) + "_" + name);
}

class llama_library {
 public:
  llama_library() {
    const char* env = std::getenv("PAGEDSERVE_GGML_LIB_DIR");
    const std::filesystem::path dir = env ? env : PAGEDSERVE_GGML_LIB_DIR;
    std::error_code absent;
    for (const auto& e : std::filesystem::directory_iterator(dir, absent))
      if (e.path().filename().string().starts_with("libllama.")) handle_ = dlopen(e.path().c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!handle_) {
      why_ = "llama.cpp's libllama is not installed in " + dir.string() + " (npm ci in tests/ggml_reference)";
      return;
    }
    bind(quantize_defaults_, "llama_model_quantize_default_params");
    bind(quantize_, "llama_model_quantize");
    bind(model_defaults_, "llama_model_default_params");
    bind(context_defaults_, "llama_context_default_params");
    bind(load_model_, "llama_model_load_from_file");
    bind(free_model_, "llama_model_free");
    bind(new_context_, "llama_init_from_model");
    bind(free_context_, "llama_free");
    bind(batch_init_, "llama_batch_init");
    bind(batch_free_, "llama_batch_free");
    bind(decode_, "llama_decode");
    bind(logits_ith_, "llama_get_logits_ith");
    bind(model_vocab_, "llama_model_get_vocab");
    bind(vocab_size_, "llama_vocab_n_tokens");
    bind(tokenize_, "llama_tokenize");
    void (*backend_init)() = nullptr;
    void (*log_set)(void (*)(int, const char*, void*), void*) = nullptr;
    void (*load_backends)(const char*) = nullptr;
    bind(backend_init, "llama_backend_init");
    bind(log_set, "llama_log_set");
    bind(load_backends, "ggml_backend_load_all_from_path");  // libggml's, through libllama's dependencies
    if (!why_.empty()) return;
    backend_init();
    log_set([](int, const char*, void*) {}, nullptr);  // its per-tensor lines
    load_backends(dir.c_str());                         // the CPU variant this machine runs best
    check_layouts();
  }
  ~llama_library() {
    if (handle_) dlclose(handle_);
  }
  llama_library(const llama_library&) = delete;
  llama_library& operator=(const llama_library&) = delete;

  bool ok() const { return why_.empty(); }
  const std::string& why() const { return why_; }

  // llama-quantize in to out as ftype (llama.h's llama_ftype number; 0 = all F32). allow_requantize
  // lets an already quantized file be rewritten (as `llama-quantize --allow-requantize`), e.g. back to
  // F32: every tensor dequantized by ggml.
  bool quantize(const std::filesystem::path& in, const std::filesystem::path& out, int ftype,
                bool allow_requantize = false) const {
    by_value params;
    quantize_defaults_(&params);
    const std::int32_t n_threads = 2;
    std::memcpy(params.bytes, &n_threads, 4);
    std::memcpy(params.bytes + 4, &ftype, 4);
    params.bytes[16] = static_cast<std::byte>(allow_requantize);
    return quantize_(in.c_str(), out.c_str(), &params) == 0;
  }

  // llama.cpp's tokens of each text (no BOS, special tokens as text), from the vocabulary of a GGUF file
  // (loaded vocab_only). Empty where it cannot load the vocabulary.
  std::vector<std::vector<std::int32_t>> tokenize(const std::filesystem::path& gguf,
                                                  const std::vector<std::string>& texts) const {
    std::vector<std::vector<std::int32_t>> out;
    by_value model_params;
    model_defaults_(&model_params);
    model_params.bytes[model_vocab_only_at] = std::byte{1};
    void* model = load_model_(gguf.c_str(), model_params);
    if (!model) return out;
    const void* vocab = model_vocab_(model);
    for (const std::string& text : texts) {
      std::vector<std::int32_t> ids(text.size() + 8);
      std::int32_t n = tokenize_(vocab, text.data(), static_cast<std::int32_t>(text.size()), ids.data(),
                                 static_cast<std::int32_t>(ids.size()), false, false);
      if (n < 0) {
        ids.resize(static_cast<std::size_t>(-n));
        n = tokenize_(vocab, text.data(), static_cast<std::int32_t>(text.size()), ids.data(), -n, false, false);
      }
      ids.resize(static_cast<std::size_t>(std::max(n, 0)));
      out.push_back(std::move(ids));
    }
    free_model_(model);
    return out;
  }

  // llama.cpp's logits after every position of each prompt, teacher forced, one prompt per fresh
  // context: [prompt][position * vocab + token]. One thread, flash attention off (its CPU default when
  // quant_golden.json was made), the F16 K/V cache llama.cpp defaults to. Empty where it fails.
  std::vector<std::vector<float>> logits(const std::filesystem::path& gguf,
                                         const std::vector<std::vector<std::int32_t>>& prompts) const {
    std::vector<std::vector<float>> out;
    by_value model_params;
    model_defaults_(&model_params);
    void* model = load_model_(gguf.c_str(), model_params);
    if (!model) return out;
    const int vocab = vocab_size_(model_vocab_(model));
    for (const auto& ids : prompts) {
      by_value context_params;
      context_defaults_(&context_params);
      const std::uint32_t n_ctx = static_cast<std::uint32_t>(ids.size()) + 16;
      const std::int32_t one_thread = 1, flash_attn_disabled = 0;
      std::memcpy(context_params.bytes + 0, &n_ctx, 4);
      std::memcpy(context_params.bytes + context_threads_at, &one_thread, 4);
      std::memcpy(context_params.bytes + context_threads_at + 4, &one_thread, 4);
      std::memcpy(context_params.bytes + context_flash_attn_at, &flash_attn_disabled, 4);
      void* ctx = new_context_(model, context_params);
      if (!ctx) break;
      const int n = static_cast<int>(ids.size());
      batch b = batch_init_(n, 0, 1);
      b.n_tokens = n;
      for (int i = 0; i < n; ++i) {
        b.token[i] = ids[i], b.pos[i] = i, b.n_seq_id[i] = 1, b.seq_id[i][0] = 0, b.logits[i] = 1;
      }
      const bool decoded = decode_(ctx, b) == 0;
      batch_free_(b);
      if (decoded) {
        auto& p = out.emplace_back(static_cast<std::size_t>(n) * vocab);
        for (int i = 0; i < n; ++i) std::memcpy(p.data() + static_cast<std::size_t>(i) * vocab, logits_ith_(ctx, i), vocab * sizeof(float));
      }
      free_context_(ctx);
      if (!decoded) break;
    }
    free_model_(model);
    if (out.size() != prompts.size()) out.clear();
    return out;
  }

 private:
  struct alignas(16) by_value {  // larger than any version's params struct
    std::byte bytes[1024] = {};
  };
  struct batch {  // llama_batch, unchanged since it exists
    std::int32_t n_tokens;
    std::int32_t* token;
    float* embd;
    std::int32_t* pos;
    std::int32_t* n_seq_id;
    std::int32_t** seq_id;
    std::int8_t* logits;
  };
  // llama_context_params of this libllama: n_ctx, n_batch, n_ubatch, n_seq_max, n_rs_seq,
  // n_outputs_max, n_outputs_max_per_seq (u32), then n_threads, n_threads_batch (i32), ctx_type,
  // rope_scaling_type, pooling_type, attention_type, flash_attn_type.
  static constexpr std::size_t context_threads_at = 28, context_flash_attn_at = 52;
  // llama_model_params: devices, tensor_buft_overrides, n_gpu_layers .. kv_overrides, then the booleans
  // vocab_only, check_tensors, use_extra_bufts.
  static constexpr std::size_t model_vocab_only_at = 72;

  template <class F>
  void bind(F& f, const char* name) {
    f = reinterpret_cast<F>(dlsym(handle_, name));
    if (!f && why_.empty()) why_ = std::string("libllama has no ") + name;
  }
  static std::int32_t i32_at(const by_value& p, std::size_t at) {
    std::int32_t v;
    std::memcpy(&v, p.bytes + at, 4);
    return v;
  }
  // The defaults llama.cpp's source gives the fields around those set above.
  void check_layouts() {
    by_value c;
    context_defaults_(&c);
    const std::int32_t want[] = {512, 2048, 512, 1, 0, 0, 1, 4, 4};  // ... n_threads, n_threads_batch
    for (std::size_t i = 0; i < std::size(want); ++i)
      if (i32_at(c, 4 * i) != want[i]) why_ = "libllama's llama_context_params is not the layout this test writes";
    if (i32_at(c, context_flash_attn_at) != -1) why_ = "libllama's flash_attn_type is not where this test writes it";
    by_value m;
    model_defaults_(&m);
    if (i32_at(m, 16) != -1 || m.bytes[model_vocab_only_at] != std::byte{0} || m.bytes[model_vocab_only_at + 2] != std::byte{1})
      why_ = "libllama's llama_model_params is not the layout this test writes";
    by_value q;
    quantize_defaults_(&q);
    if (i32_at(q, 4) != 7 || i32_at(q, 8) != i32_at(q, 12) || q.bytes[16] != std::byte{0} || q.bytes[17] != std::byte{1})
      why_ = "libllama's llama_model_quantize_params is not the layout this test writes";
  }

  void* handle_ = nullptr;
  std::string why_;
  void (*quantize_defaults_)(by_value*) = nullptr;
  std::uint32_t (*quantize_)(const char*, const char*, const by_value*) = nullptr;
  void (*model_defaults_)(by_value*) = nullptr;
  void (*context_defaults_)(by_value*) = nullptr;
  void* (*load_model_)(const char*, by_value) = nullptr;
  void (*free_model_)(void*) = nullptr;
  void* (*new_context_)(void*, by_value) = nullptr;
  void (*free_context_)(void*) = nullptr;
  batch (*batch_init_)(std::int32_t, std::int32_t, std::int32_t) = nullptr;
  void (*batch_free_)(batch) = nullptr;
  std::int32_t (*decode_)(void*, batch) = nullptr;
  float* (*logits_ith_)(void*, std::int32_t) = nullptr;
  const void* (*model_vocab_)(const void*) = nullptr;
  std::int32_t (*vocab_size_)(const void*) = nullptr;
  std::int32_t (*tokenize_)(const void*, const char*, std::int32_t, std::int32_t*, std::int32_t, bool, bool) = nullptr;
};

}  // namespace pagedserve::test
