#pragma once
// Which activation blocks (kernels.hpp's act_block32 / act_block256) a block-quantized weight pairs with.
#include "pagedserve/kernels.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::kernels {

// Which activation format a weight type is paired with (its ggml vec_dot_type).
enum class act_format { q8_0, q8_1, q8_k };

constexpr act_format act_format_of(dtype wtype) {
  switch (wtype) {
    case dtype::q4_1:
    case dtype::q5_1: return act_format::q8_1;
    case dtype::q2_k:
    case dtype::q3_k:
    case dtype::q4_k:
    case dtype::q5_k:
    case dtype::q6_k:
    case dtype::iq4_xs: return act_format::q8_k;
    default: return act_format::q8_0;
  }
}

}  // namespace pagedserve::kernels
