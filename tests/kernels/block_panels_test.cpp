// Block-quantized matrices repacked into row panels (model/ggml_block_panels.hpp): the panels hold
// exactly the file's blocks (every row gathers back to its bytes; dequantized rows equal), ragged row
// counts included; and every kernel table computes panel-packed weights: the tables without a panel
// kernel give their own bits over the file's rows, the ones with it agree with the row kernels within
// rounding and are bit-exact batch invariant (1..33 tokens, any position, any row split).
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "model/ggml_block_panels.hpp"
#include "model/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/weight.hpp"
#include "support/panel_matrix.hpp"

namespace pagedserve::kernels {
namespace {

constexpr dtype panel_types[] = {dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0,   dtype::iq4_nl,
                                 dtype::q2_k, dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_xs};
constexpr int ragged_rows[] = {1, 4, 5, 16, 17, 37};

// A few blocks a row: 3 of the 32-weight formats' (an odd count), 2 of the 256-weight ones'.
int cols_of(dtype t) { return block_layout_of(t).elements == 256 ? 512 : 96; }

// Where a block of t holds its fp16 fields: d (q4_1, q5_1: d and m; q4_k, q5_k: d and dmin) at its
// start; q2_k's d and dmin, q3_k's and q6_k's d at its end.
std::vector<int> fp16_offsets(dtype t) {
  if (t == dtype::q2_k) return {80, 82};
  if (t == dtype::q3_k) return {108};
  if (t == dtype::q6_k) return {208};
  if (t == dtype::q4_k || t == dtype::q5_k || t == dtype::q4_1 || t == dtype::q5_1) return {0, 2};
  return {0};
}

// Random blocks (every nibble, high-bit and scale pattern) with fp16 fields in +-[0.001, 0.01].
std::vector<std::byte> random_rows(dtype t, int rows, int cols, std::mt19937& rng) {
  std::vector<std::byte> data(rows * block_row_bytes(t, cols));
  std::uniform_int_distribution<int> byte(0, 255);
  std::uniform_real_distribution<float> mag(0.001f, 0.01f);
  for (std::byte& b : data) b = static_cast<std::byte>(byte(rng));
  for (std::size_t at = 0; at < data.size(); at += block_layout_of(t).bytes) {
    for (const int off : fp16_offsets(t)) {
      const std::uint16_t d = f32_to_f16(byte(rng) % 2 ? mag(rng) : -mag(rng));
      std::memcpy(&data[at + off], &d, 2);
    }
  }
  return data;
}

struct packed_matrix {
  std::vector<std::byte> rows_data;
  test::panel_matrix panels;
  weight as_rows;
};

packed_matrix random_packed(dtype t, int rows, int cols, std::mt19937& rng) {
  packed_matrix m;
  m.rows_data = random_rows(t, rows, cols, rng);
  m.panels = test::pack_panels(t, m.rows_data.data(), rows, cols);
  m.as_rows = weight{m.rows_data.data(), t, rows, cols};
  return m;
}

TEST(BlockPanels, HoldExactlyTheFilesBlocks) {
  std::mt19937 rng(5);
  for (dtype t : panel_types)
    for (int rows : ragged_rows) {
      const int cols = cols_of(t);
      const packed_matrix m = random_packed(t, rows, cols, rng);
      const std::size_t row_bytes = block_row_bytes(t, cols);
      EXPECT_EQ(m.panels.w.n_bytes(), m.panels.bytes.size());
      EXPECT_EQ(m.panels.bytes.size(), static_cast<std::size_t>(block_panel_padded_rows(rows)) * row_bytes);
      std::vector<std::byte> row(row_bytes);
      std::vector<float> want(cols), got(cols);
      for (int o = 0; o < rows; ++o) {
        block_panels_row(row.data(), m.panels.w, o);
        ASSERT_EQ(std::memcmp(row.data(), m.rows_data.data() + o * row_bytes, row_bytes), 0) << "row " << o << " of " << rows;
        weight_row_to_f32(want.data(), m.as_rows, o);
        weight_row_to_f32(got.data(), m.panels.w, o);
        for (int i = 0; i < cols; ++i) {
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i])) << "row " << o << " col " << i;
          ASSERT_EQ(std::bit_cast<std::uint32_t>(weight_at(m.panels.w, static_cast<std::size_t>(o) * cols + i)),
                    std::bit_cast<std::uint32_t>(want[i]));
        }
      }
      // Padding rows are zero blocks: they add nothing and hold no stale bytes.
      for (int o = rows; o < block_panel_padded_rows(rows); ++o) {
        block_panels_row(row.data(), m.panels.w, o);
        for (std::byte b : row) ASSERT_EQ(b, std::byte{0}) << "padding row " << o;
      }
    }
}

std::vector<std::byte> quantize(const kernel_table& kt, dtype t, const std::vector<float>& x, int n_tokens, int cols) {
  const std::size_t row_bytes = activation_row_bytes(t, cols);
  std::vector<std::byte> xq(n_tokens * row_bytes);
  for (int i = 0; i < n_tokens; ++i) kt.quantize_activations(xq.data() + i * row_bytes, x.data() + i * cols, t, cols);
  return xq;
}

class BlockPanelsMatmul : public ::testing::TestWithParam<const kernel_table*> {};

TEST_P(BlockPanelsMatmul, AgreeWithTheRowKernels) {
  const kernel_table& kt = *GetParam();
  std::mt19937 rng(11);
  for (dtype t : panel_types)
    for (int rows : ragged_rows) {
      const int n_tokens = 5, cols = cols_of(t);
      const packed_matrix m = random_packed(t, rows, cols, rng);
      const std::vector<std::byte> xq = quantize(kt, t, random_vector(static_cast<std::size_t>(n_tokens) * cols, rng), n_tokens, cols);
      std::vector<float> want(static_cast<std::size_t>(n_tokens) * rows), got(want.size(), NAN);
      kt.matmul_blocks(want.data(), xq.data(), m.as_rows, n_tokens, 0, rows);
      kt.matmul_blocks(got.data(), xq.data(), m.panels.w, n_tokens, 0, rows);
      if (!block_panels_pay(kt, t)) {  // rows gathered from the panels into the row kernels: the same bits
        for (std::size_t i = 0; i < got.size(); ++i)
          ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i])) << "output " << i;
      } else {  // the same integers, summed in fp32 in another order
        expect_close(got, want, cols / 32);
        if (HasFailure()) FAIL() << dtype_name(t) << ", " << rows << " rows";
      }
    }
}

// A token's outputs have the same bits alone and in any batch of 1..33 tokens at any position, and
// whatever range of rows a call covers (ragged: 37 rows, 3 panels, the last one mostly padding).
TEST_P(BlockPanelsMatmul, BatchInvariant) {
  const kernel_table& kt = *GetParam();
  std::mt19937 rng(13);
  const int n_tokens = 33, rows = 37;
  for (dtype t : panel_types) {
    const int cols = cols_of(t);
    const packed_matrix m = random_packed(t, rows, cols, rng);
    const std::size_t x_bytes = activation_row_bytes(t, cols);
    const std::vector<std::byte> xq = quantize(kt, t, random_vector(static_cast<std::size_t>(n_tokens) * cols, rng), n_tokens, cols);
    std::vector<float> alone(static_cast<std::size_t>(n_tokens) * rows);
    for (int i = 0; i < n_tokens; ++i)
      kt.matmul_blocks(alone.data() + static_cast<std::size_t>(i) * rows, xq.data() + i * x_bytes, m.panels.w, 1, 0, rows);
    for (int batch = 1; batch <= n_tokens; ++batch)
      for (const int first : {0, n_tokens - batch, (n_tokens - batch) / 2}) {
        std::vector<float> out(static_cast<std::size_t>(batch) * rows, NAN);
        const int split = (batch * 7) % rows;  // two calls, rows [0, split) and [split, rows)
        kt.matmul_blocks(out.data(), xq.data() + first * x_bytes, m.panels.w, batch, 0, split);
        kt.matmul_blocks(out.data(), xq.data() + first * x_bytes, m.panels.w, batch, split, rows);
        for (int i = 0; i < batch; ++i)
          for (int o = 0; o < rows; ++o)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(out[static_cast<std::size_t>(i) * rows + o]),
                      std::bit_cast<std::uint32_t>(alone[static_cast<std::size_t>(first + i) * rows + o]))
                << dtype_name(t) << ": token " << first + i << " in a batch of " << batch << " at " << i << ", row " << o;
      }
  }
}

// The avx2 / avx2_vnni panel kernels (block_panel_*_avx2.hpp) sum the same integers in the avx512_vnni
// kernels' fp32 sequence: every output of every type they cover has the avx512_vnni table's bits, over
// the same quantized activations, for 1..33 tokens, ragged rows and row ranges.
TEST(BlockPanelsAvx2, BitIdenticalToAvx512Vnni) {
  const kernel_table* zmm = kernel_table_select("avx512_vnni");
  if (!zmm) GTEST_SKIP() << "no avx512_vnni table on this CPU to compare with";
  std::mt19937 rng(17);
  int n_compared = 0;
  for (const char* name : {"avx2", "avx2_vnni"}) {
    const kernel_table* ymm = kernel_table_select(name);
    if (!ymm) continue;  // avx2_vnni: not on a CPU without AVX-VNNI (same source as avx2's)
    for (dtype t : panel_types) {
      if (!block_panels_pay(*ymm, t)) continue;
      ASSERT_TRUE(block_panels_pay(*zmm, t));
      ++n_compared;
      for (int rows : ragged_rows) {
        const int cols = cols_of(t), n_tokens = 33;
        const packed_matrix m = random_packed(t, rows, cols, rng);
        const std::size_t x_bytes = activation_row_bytes(t, cols);
        const std::vector<std::byte> xq =
            quantize(*zmm, t, random_vector(static_cast<std::size_t>(n_tokens) * cols, rng), n_tokens, cols);
        for (const int batch : {1, 2, 3, 4, 5, 8, 16, 33}) {
          const int first = (n_tokens - batch) / 2, split = (batch * 7) % rows;
          std::vector<float> want(static_cast<std::size_t>(batch) * rows, NAN), got(want.size(), NAN);
          zmm->matmul_blocks(want.data(), xq.data() + first * x_bytes, m.panels.w, batch, 0, rows);
          ymm->matmul_blocks(got.data(), xq.data() + first * x_bytes, m.panels.w, batch, 0, split);
          ymm->matmul_blocks(got.data(), xq.data() + first * x_bytes, m.panels.w, batch, split, rows);
          for (std::size_t i = 0; i < got.size(); ++i)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i]))
                << name << " " << dtype_name(t) << ": " << rows << " rows, batch " << batch << ", output " << i;
        }
      }
    }
  }
  EXPECT_GE(n_compared, 12) << "q4_0, q4_1, q5_0, q5_1, q8_0, iq4_nl, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_xs at least";
}

INSTANTIATE_TEST_SUITE_P(Tables, BlockPanelsMatmul, ::testing::ValuesIn(supported_tables()),
                         [](const ::testing::TestParamInfo<const kernel_table*>& info) {
                           return std::string(isa_name(info.param->which));
                         });

}  // namespace
}  // namespace pagedserve::kernels
