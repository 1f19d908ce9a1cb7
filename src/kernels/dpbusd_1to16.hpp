#pragma once
// acc + vpdpbusd(w, the 4 int8 activations at `a` broadcast to every 32-bit element), the broadcast as the
// instruction's {1to16} memory operand. GCC emits a separate vpbroadcastd for _mm512_set1_epi32 of a
// load; in the 1-token panel kernels (q3_k, q2_k, iq4_xs) the folded form measured faster. Included by
// the avx512_vnni kernels only (compiled with VNNI).
#include <immintrin.h>

#include <cstdint>

namespace pagedserve::kernels {

inline __m512i dpbusd_1to16(__m512i acc, __m512i w, const std::int8_t* a) {
  asm("vpdpbusd %2%{1to16%}, %1, %0" : "+v"(acc) : "v"(w), "m"(*reinterpret_cast<const std::int32_t*>(a)));
  return acc;
}

}  // namespace pagedserve::kernels
