#pragma once
// The constants of the sampler's exp (Cephes' expf: exp(x) = 2^n * exp(r), r = x - n ln2 split in two
// parts, exp(r) by a degree-7 polynomial), shared by its portable and AVX-512 variants.
namespace pagedserve::sampling::exp_constants {
inline constexpr float lowest = -87.0f;  // below this exp(x) is denormal: taken as 0
inline constexpr float log2e = 1.44269504088896341f;
inline constexpr float ln2_hi = 0.693359375f;
inline constexpr float ln2_lo = -2.12194440e-4f;
inline constexpr float c0 = 1.9875691500e-4f, c1 = 1.3981999507e-3f, c2 = 8.3334519073e-3f, c3 = 4.1665795894e-2f,
                       c4 = 1.6666665459e-1f, c5 = 5.0000001201e-1f;
}  // namespace pagedserve::sampling::exp_constants
