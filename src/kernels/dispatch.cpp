// Chooses the kernel table once from CPU detection; config or tests may force a variant.
#include <vector>

#include "block_kernels.hpp"
#include "model/ggml_block_panels.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels {

extern const kernel_table kernel_table_scalar;
extern const kernel_table kernel_table_avx2;         // table_avx2.cpp
extern const kernel_table kernel_table_avx2_vnni;    // table_avx2.cpp
extern const kernel_table kernel_table_avx512;       // table_avx512.cpp
extern const kernel_table kernel_table_avx512_vnni;  // table_avx512.cpp
extern const kernel_table kernel_table_avx512_bf16;  // table_avx512.cpp

std::string_view isa_name(isa v) {
  switch (v) {
    case isa::scalar: return "scalar";
    case isa::avx2: return "avx2";
    case isa::avx2_vnni: return "avx2_vnni";
    case isa::avx512: return "avx512";
    case isa::avx512_vnni: return "avx512_vnni";
    case isa::avx512_bf16: return "avx512_bf16";
  }
  return "unknown";
}

namespace {

bool cpu_supports(isa v) {
  __builtin_cpu_init();
  switch (v) {
    case isa::scalar: return true;
    case isa::avx2:  // F16C widens fp16 weights (every AVX2 CPU has it)
      return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
    case isa::avx2_vnni: return cpu_supports(isa::avx2) && __builtin_cpu_supports("avxvnni");
    case isa::avx512:
      return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
             __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq");
    case isa::avx512_vnni: return cpu_supports(isa::avx512) && __builtin_cpu_supports("avx512vnni");
    case isa::avx512_bf16: return cpu_supports(isa::avx512_vnni) && __builtin_cpu_supports("avx512bf16");
  }
  return false;
}

// Best first.
const kernel_table* const all_tables[] = {&kernel_table_avx512_bf16, &kernel_table_avx512_vnni, &kernel_table_avx512,
                                          &kernel_table_avx2_vnni,   &kernel_table_avx2,        &kernel_table_scalar};

}  // namespace

std::span<const kernel_table* const> kernel_tables_supported() {
  static const std::vector<const kernel_table*> supported = [] {
    std::vector<const kernel_table*> v;
    for (const kernel_table* t : all_tables)
      if (cpu_supports(t->which)) v.push_back(t);
    return v;
  }();
  return supported;
}

bool block_panels_pay(const kernel_table& kt, dtype t) {
  switch (kt.which) {
    case isa::avx512_vnni:
    case isa::avx512_bf16: return block_panels_defined(t);
    case isa::avx2:
    case isa::avx2_vnni: return detail::block_panels_avx2(t);
    default: return false;
  }
}

const kernel_table* kernel_table_select(std::string_view forced) {
  for (const kernel_table* t : kernel_tables_supported())
    if (forced == "auto" || forced == isa_name(t->which)) return t;
  return nullptr;
}

}  // namespace pagedserve::kernels
