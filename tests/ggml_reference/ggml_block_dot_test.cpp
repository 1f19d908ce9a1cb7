// pagedserve's block-quantized matmul (every kernel table) against ggml's CPU backend on the same
// weight bytes and activations: ggml quantizes the activations with its vec_dot_type's from_float
// and multiplies with its vec_dot, the code path of llama.cpp's own logits. Both quantize the
// activations the same way, so the two differ only by float summation order.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ggml_library.hpp"
#include "model/ggml_block_panels.hpp"
#include "model/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"
#include "support/panel_matrix.hpp"
#include "support/random_blocks.hpp"

namespace pagedserve {
namespace {

TEST(ggml_reference, block_matmul_matches_ggml_vec_dot) {
  const test::ggml_library ggml;
  if (!ggml.ok()) GTEST_SKIP() << ggml.why();
  std::mt19937 rng(1818);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  const int rows = 24, cols = 2048;
  std::vector<float> x(cols);
  for (float& v : x) v = normal(rng);
  for (const dtype t : test::block_types) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const std::vector<std::byte> blocks = test::random_blocks(t, rows * cols / block_layout_of(t).elements, rng);
    const weight w{blocks.data(), t, rows, cols};
    const std::size_t row_bytes = block_row_bytes(t, cols);

    // ggml: activations in its vec_dot_type, one vec_dot per row.
    const test::ggml_cpu_traits& traits = ggml.cpu_traits(*ggml_type_of(t));
    const test::ggml_cpu_traits& act = ggml.cpu_traits(static_cast<std::uint32_t>(traits.vec_dot_type));
    std::vector<std::byte> xq_ggml(4 * static_cast<std::size_t>(cols) + 1024);
    act.from_float(x.data(), xq_ggml.data(), cols);
    std::vector<float> theirs(rows), dequantized(cols);
    std::vector<double> magnitude(rows);
    for (int o = 0; o < rows; ++o) {
      traits.vec_dot(cols, &theirs[o], 0, blocks.data() + o * row_bytes, 0, xq_ggml.data(), 0, 1);
      weight_row_to_f32(dequantized.data(), w, o);
      for (int i = 0; i < cols; ++i) magnitude[o] += std::fabs(static_cast<double>(dequantized[i]) * x[i]);
    }

    for (const kernels::kernel_table* kt : kernels::kernel_tables_supported()) {
      SCOPED_TRACE(std::string(kernels::isa_name(kt->which)));
      std::vector<std::byte> xq(kernels::activation_row_bytes(t, cols));
      kt->quantize_activations(xq.data(), x.data(), t, cols);
      std::vector<float> ours(rows);
      kt->matmul_blocks(ours.data(), xq.data(), w, 1, 0, rows);
      for (int o = 0; o < rows; ++o)
        EXPECT_NEAR(ours[o], theirs[o], 1e-5 * magnitude[o] + 1e-6) << "row " << o << " (ggml " << ggml.cpu_variant() << ")";
      if (!block_panels_defined(t)) continue;
      // The same matrix repacked into row panels, as the loader stores it (ggml_block_panels.hpp).
      const test::panel_matrix packed = test::pack_panels(t, blocks.data(), rows, cols);
      kt->matmul_blocks(ours.data(), xq.data(), packed.w, 1, 0, rows);
      for (int o = 0; o < rows; ++o)
        EXPECT_NEAR(ours[o], theirs[o], 1e-5 * magnitude[o] + 1e-6) << "panels, row " << o;
    }
  }
}

}  // namespace
}  // namespace pagedserve
