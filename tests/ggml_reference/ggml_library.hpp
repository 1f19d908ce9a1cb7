#pragma once
// ggml's own shared libraries, opened with dlopen: llama.cpp's prebuilt CPU build as the npm package
// @node-llama-cpp/linux-x64 ships it (tests/ggml_reference/package.json; a CTest fixture installs it).
// The block-format and kernel tests call ggml's dequantize_row_* and its CPU backend's vec_dot on
// the same bytes as pagedserve, so every type is checked against the reference itself, not against
// a transcription of it. Only the C entry points are used; their signatures are ggml's public ABI.
#include <dlfcn.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

namespace pagedserve::test {

// ggml_type_traits_cpu (ggml-cpu.h): how ggml's CPU backend multiplies a weight type.
struct ggml_cpu_traits {
  void (*from_float)(const float* x, void* y, std::int64_t k);
  void (*vec_dot)(int n, float* s, std::size_t bs, const void* x, std::size_t bx, const void* y, std::size_t by, int nrc);
  int vec_dot_type;  // enum ggml_type
  std::int64_t nrows;
};

class ggml_library {
 public:
  // Opens libggml-base and the best CPU variant this machine runs (the one llama.cpp itself picks,
  // by each variant's ggml_backend_score). ok() is false, with why(), where the package is absent.
  ggml_library() {
    const char* env = std::getenv("PAGEDSERVE_GGML_LIB_DIR");
    const std::filesystem::path dir = env ? env : PAGEDSERVE_GGML_LIB_DIR;
    base_ = dlopen((dir / "libggml-base.so").c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!base_) {
      why_ = "ggml's libraries are not installed in " + dir.string() + " (npm ci in tests/ggml_reference)";
      return;
    }
    int best_score = 0;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
      const std::string name = e.path().filename().string();
      if (!name.starts_with("libggml-cpu-")) continue;
      void* h = dlopen(e.path().c_str(), RTLD_NOW | RTLD_LOCAL);
      if (!h) continue;
      auto score = reinterpret_cast<int (*)()>(dlsym(h, "ggml_backend_score"));
      const int s = score ? score() : 0;
      if (s > best_score) {
        if (cpu_) dlclose(cpu_);
        cpu_ = h, best_score = s, cpu_name_ = name;
      } else {
        dlclose(h);
      }
    }
    if (!cpu_) {
      why_ = "no ggml CPU variant in " + dir.string() + " runs on this CPU";
      return;
    }
    reinterpret_cast<void (*)()>(dlsym(cpu_, "ggml_cpu_init"))();
    traits_ = reinterpret_cast<const ggml_cpu_traits* (*)(int)>(dlsym(cpu_, "ggml_get_type_traits_cpu"));
  }
  ~ggml_library() {
    if (cpu_) dlclose(cpu_);
    if (base_) dlclose(base_);
  }
  ggml_library(const ggml_library&) = delete;
  ggml_library& operator=(const ggml_library&) = delete;

  bool ok() const { return cpu_ != nullptr && traits_ != nullptr; }
  const std::string& why() const { return why_; }
  const std::string& cpu_variant() const { return cpu_name_; }

  // ggml's dequantize_row_<suffix> (suffix as ggml spells it: "q4_K", "iq4_xs").
  using dequantize_fn = void (*)(const void* x, float* y, std::int64_t k);
  dequantize_fn dequantize(const std::string& suffix) const {
    return reinterpret_cast<dequantize_fn>(dlsym(base_, ("dequantize_row_" + suffix).c_str()));
  }
  const ggml_cpu_traits& cpu_traits(std::uint32_t ggml_type) const { return *traits_(static_cast<int>(ggml_type)); }

 private:
  void* base_ = nullptr;
  void* cpu_ = nullptr;
  std::string cpu_name_, why_;
  const ggml_cpu_traits* (*traits_)(int) = nullptr;
};

}  // namespace pagedserve::test
