// The AVX-VNNI int8 matmul (compiled with -mavxvnni on top of the AVX2 flags): vpdpbusd on ymm, two
// per 64 weight bytes and token, u8 activations (offset 128) times s8 weights into int32 row sums.
#include <immintrin.h>

#include <cstring>

#include "int8_avx2.hpp"
#include "int8_kernels.hpp"
#include "int8_tiles.hpp"

namespace pagedserve::kernels {
namespace {

// 6 tokens x 1 panel: 12 accumulators, 2 weight vectors and a broadcast in 16 ymm.
struct vnni256 {
  static constexpr int max_tokens = 6, max_panels = 1;
  struct acc {
    __m256i lo, hi;  // rows 0-7, 8-15
  };
  struct wvec {
    __m256i lo, hi;
  };
  using xvec = __m256i;
  static acc zero() { return {_mm256_setzero_si256(), _mm256_setzero_si256()}; }
  static wvec load_w(const std::int8_t* p) {
    return {_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + 32))};
  }
  static xvec load_x(const std::uint8_t* p) {
    std::int32_t v;
    std::memcpy(&v, p, sizeof v);
    return _mm256_set1_epi32(v);
  }
  static acc step(acc a, const wvec& w, xvec x) {
    return {_mm256_dpbusd_avx_epi32(a.lo, x, w.lo), _mm256_dpbusd_avx_epi32(a.hi, x, w.hi)};
  }
  static void store(float* out, const acc& a, const std::int32_t* row_sums, const float* w_scales, float x_scale,
                    int n_rows) {
    i8_store16(out, a.lo, a.hi, row_sums, w_scales, x_scale, n_rows);
  }
};

}  // namespace

void detail::matmul_i8_avx2_vnni(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w,
                                 int n_tokens, int p_begin, int p_end) {
  matmul_i8_tiles<vnni256>(out, xq, x_scales, w, n_tokens, p_begin, p_end);
}

}  // namespace pagedserve::kernels
