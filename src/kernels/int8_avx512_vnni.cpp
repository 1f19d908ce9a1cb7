// The AVX512-VNNI int8 matmul (compiled with -mavx512vnni on top of the AVX-512 flags): one vpdpbusd
// per 64 weight bytes and token, u8 activations (offset 128) times s8 weights into 16 int32 row sums.
#pragma GCC diagnostic ignored "-Wuninitialized"  // GCC PR 105593, as in table_avx512.cpp
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstring>

#include "int8_avx512.hpp"
#include "int8_kernels.hpp"
#include "int8_tiles.hpp"

namespace pagedserve::kernels {
namespace {

// 6 tokens x 4 panels: 24 accumulators, 4 weight vectors and a broadcast in 32 zmm.
struct vnni512 {
  static constexpr int max_tokens = 6, max_panels = 4;
  using acc = __m512i;
  using wvec = __m512i;
  using xvec = __m512i;
  static acc zero() { return _mm512_setzero_si512(); }
  static wvec load_w(const std::int8_t* p) { return _mm512_loadu_si512(p); }
  static xvec load_x(const std::uint8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm512_set1_epi32(v);
  }
  // Inline asm ties the accumulator to its register: GCC 12 copies it around every
  // _mm512_dpbusd_epi32 (one extra move per product, and spills with 24 accumulators).
  static acc step(acc a, wvec w, xvec x) {
    asm("vpdpbusd %2, %1, %0" : "+v"(a) : "v"(x), "v"(w));
    return a;
  }
  static void store(float* out, acc a, const std::int32_t* row_sums, const float* w_scales, float x_scale, int n_rows) {
    i8_store16(out, a, row_sums, w_scales, x_scale, n_rows);
  }
};

}  // namespace

void detail::matmul_i8_avx512_vnni(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w,
                                   int n_tokens, int p_begin, int p_end) {
  matmul_i8_tiles<vnni512>(out, xq, x_scales, w, n_tokens, p_begin, p_end);
}

}  // namespace pagedserve::kernels
