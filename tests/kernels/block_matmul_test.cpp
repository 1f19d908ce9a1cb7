// The block-quantized matmuls (ggml's q4_0 ... iq4_xs weights, int8 activations) on every kernel
// table this CPU runs: the activation quantizers against a transcription of ggml's formulas, every
// format against the exact reference (dequantized weights times the unquantized activations) within
// the error the activation quantization can cause, the SIMD tables against the scalar one, and
// bit-exact batch invariance (any batch size, position and row split) for the tables and ops::.
// Weights are random bytes with small finite fp16 scales: every bit pattern of the packed integers
// shows up, and nothing depends on an encoder.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "kernel_test_support.hpp"
#include "model/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::kernels {
namespace {

constexpr dtype all_block_types[] = {dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0, dtype::q2_k,
                                     dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs};

bool is_k_format(dtype t) { return block_layout_of(t).elements == 256; }
bool has_min_q8_1(dtype t) { return t == dtype::q4_1 || t == dtype::q5_1; }

// Byte offsets of a block's fp16 fields (d, and dmin or m).
std::vector<int> fp16_offsets(dtype t) {
  switch (t) {
    case dtype::q4_1:
    case dtype::q5_1:
    case dtype::q4_k:
    case dtype::q5_k: return {0, 2};
    case dtype::q2_k: return {80, 82};
    case dtype::q3_k: return {108};
    case dtype::q6_k: return {208};
    default: return {0};
  }
}

// A [rows, cols] matrix of random blocks whose fp16 fields hold values in +-[0.001, 0.01].
std::vector<std::byte> random_blocks(dtype t, int rows, int cols, std::mt19937& rng) {
  std::vector<std::byte> data(rows * block_row_bytes(t, cols));
  std::uniform_int_distribution<int> byte(0, 255);
  for (std::byte& b : data) b = static_cast<std::byte>(byte(rng));
  std::uniform_real_distribution<float> mag(0.001f, 0.01f);
  const block_layout l = block_layout_of(t);
  for (std::size_t at = 0; at < data.size(); at += l.bytes)
    for (int off : fp16_offsets(t)) {
      const std::uint16_t v = f32_to_f16(byte(rng) % 2 ? mag(rng) : -mag(rng));
      std::memcpy(&data[at + off], &v, 2);
    }
  return data;
}

// Activations whose magnitude changes from block to block (a wrong block scale would show).
std::vector<float> random_activations(int n_tokens, int cols, std::mt19937& rng) {
  std::vector<float> x = random_vector(static_cast<std::size_t>(n_tokens) * cols, rng);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] *= 0.25f + static_cast<float>((i / 32) % 5);
  return x;
}

struct quantized_tokens {
  std::vector<std::byte> xq;
  std::size_t row_bytes = 0;
};

quantized_tokens quantize(const kernel_table& kt, dtype t, const std::vector<float>& x, int n_tokens, int cols) {
  quantized_tokens q;
  q.row_bytes = activation_row_bytes(t, cols);
  q.xq.resize(n_tokens * q.row_bytes);
  for (int i = 0; i < n_tokens; ++i) kt.quantize_activations(q.xq.data() + i * q.row_bytes, x.data() + i * cols, t, cols);
  return q;
}

// x^[cols] = d * q of one token's quantized activations, and for q8_1 each block's s.
std::vector<float> dequantized_activations(dtype t, const std::byte* xq, int cols, std::vector<float>* s = nullptr) {
  std::vector<float> x(cols);
  if (is_k_format(t)) {
    const auto* a = reinterpret_cast<const act_block256*>(xq);
    for (int i = 0; i < cols; ++i) x[i] = a[i / 256].d * a[i / 256].qs[i % 256];
  } else {
    const auto* a = reinterpret_cast<const act_block32*>(xq);
    for (int i = 0; i < cols; ++i) x[i] = a[i / 32].d * a[i / 32].qs[i % 32];
    if (s)
      for (int b = 0; b < cols / 32; ++b) s->push_back(a[b].s);
  }
  return x;
}

std::vector<float> run_table(const kernel_table& kt, const weight& w, const quantized_tokens& q, int n_tokens) {
  std::vector<float> out(static_cast<std::size_t>(n_tokens) * w.rows, NAN);
  kt.matmul_blocks(out.data(), q.xq.data(), w, n_tokens, 0, w.rows);
  return out;
}

class BlockMatmul : public ::testing::TestWithParam<const kernel_table*> {};

// ggml's quantize_row_q8_0 / q8_1 (x86 AVX path: round half to even) and quantize_row_q8_K_ref.
TEST_P(BlockMatmul, ActivationQuantizersAreGgmls) {
  const kernel_table& kt = *GetParam();
  std::mt19937 rng(7);
  const int n = 512;
  std::vector<float> x = random_activations(1, n, rng);
  std::fill(x.begin() + 256, x.begin() + 288, 0.0f);  // a zero block of 32
  for (dtype t : {dtype::q4_0, dtype::q4_1}) {
    std::vector<std::byte> xq(activation_row_bytes(t, n));
    kt.quantize_activations(xq.data(), x.data(), t, n);
    const auto* a = reinterpret_cast<const act_block32*>(xq.data());
    for (int b = 0; b < n / 32; ++b) {
      const float* xb = x.data() + 32 * b;
      float amax = 0.0f;
      for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(xb[i]));
      const float d = amax / 127.0f, id = amax != 0.0f ? 127.0f / amax : 0.0f;
      int sum = 0;
      for (int i = 0; i < 32; ++i) {
        const int q = static_cast<int>(std::nearbyint(xb[i] * id));
        ASSERT_EQ(a[b].qs[i], q) << dtype_name(t) << " block " << b << " element " << i;
        sum += q;
      }
      EXPECT_EQ(a[b].d, f16_to_f32(f32_to_f16(d))) << b;
      EXPECT_EQ(a[b].s, t == dtype::q4_1 ? f16_to_f32(f32_to_f16(d * static_cast<float>(sum))) : 0.0f) << b;
    }
  }
  std::fill(x.begin() + 256, x.end(), 0.0f);  // a zero super-block
  std::vector<std::byte> xq(activation_row_bytes(dtype::q4_k, n));
  kt.quantize_activations(xq.data(), x.data(), dtype::q4_k, n);
  const auto* a = reinterpret_cast<const act_block256*>(xq.data());
  for (int b = 0; b < n / 256; ++b) {
    const float* xb = x.data() + 256 * b;
    float amax = 0.0f, max = 0.0f;
    for (int i = 0; i < 256; ++i)
      if (std::fabs(xb[i]) > amax) amax = std::fabs(xb[i]), max = xb[i];
    const float iscale = amax != 0.0f ? -127.0f / max : 0.0f;
    for (int j = 0; j < 16; ++j) {
      int sum = 0;
      for (int i = 0; i < 16; ++i) {
        const int q = std::min(127, static_cast<int>(std::nearbyint(iscale * xb[16 * j + i])));
        ASSERT_EQ(a[b].qs[16 * j + i], q) << "q8_K block " << b << " element " << 16 * j + i;
        sum += q;
      }
      EXPECT_EQ(a[b].bsums[j], sum);
    }
    EXPECT_EQ(a[b].d, amax != 0.0f ? 1.0f / iscale : 0.0f);
  }
}

// |kernel - exact| <= sum_i |w_i| |x_i - x^_i| + sum_blocks |m| |s - sum x^| (q8_1's s is rounded to
// fp16 apart from x^) + fp32 rounding (4 n 2^-24 sum |w_i x_i|): what the activations' quantization
// and the float sums can move the result by; a wrong integer or scale anywhere moves it by far more.
TEST_P(BlockMatmul, WithinActivationQuantizationOfExactReference) {
  const kernel_table& kt = *GetParam();
  std::mt19937 rng(11);
  struct shape { int rows, n_tokens; };
  for (dtype t : all_block_types)
    for (const shape s : {shape{1, 1}, shape{37, 5}, shape{19, 64}}) {
      const int cols = is_k_format(t) ? 768 : 160;
      const std::vector<std::byte> blocks = random_blocks(t, s.rows, cols, rng);
      const weight w{blocks.data(), t, s.rows, cols};
      const std::vector<float> x = random_activations(s.n_tokens, cols, rng);
      const quantized_tokens q = quantize(kt, t, x, s.n_tokens, cols);
      const std::vector<float> got = run_table(kt, w, q, s.n_tokens);
      std::vector<float> want(got.size());
      reference::matmul(want.data(), x.data(), w, s.n_tokens);
      std::vector<float> row(cols);
      int n_bad = 0;
      for (int o = 0; o < s.rows; ++o) {
        dequantize_blocks(t, row.data(), blocks.data() + o * block_row_bytes(t, cols), cols);
        for (int i = 0; i < s.n_tokens; ++i) {
          std::vector<float> sums;
          const std::vector<float> xh = dequantized_activations(t, q.xq.data() + i * q.row_bytes, cols, &sums);
          const float* xi = x.data() + static_cast<std::size_t>(i) * cols;
          double bound = 0.0, mag = 0.0;
          for (int c = 0; c < cols; ++c) {
            bound += std::fabs(row[c]) * std::fabs(xi[c] - xh[c]);
            mag += std::fabs(row[c] * xi[c]);
          }
          if (has_min_q8_1(t))
            for (int b = 0; b < cols / 32; ++b) {
              std::uint16_t m;
              std::memcpy(&m, blocks.data() + o * block_row_bytes(t, cols) + b * block_layout_of(t).bytes + 2, 2);
              double block_sum = 0.0;
              for (int c = 32 * b; c < 32 * b + 32; ++c) block_sum += xh[c];
              bound += std::fabs(f16_to_f32(m)) * std::fabs(sums[b] - block_sum);
            }
          bound += 4.0 * cols * std::ldexp(mag, -24);
          const std::size_t at = static_cast<std::size_t>(i) * s.rows + o;
          if (!(std::fabs(got[at] - want[at]) <= bound) && ++n_bad <= 5)
            ADD_FAILURE() << dtype_name(t) << " row " << o << " token " << i << ": got " << got[at] << ", exact "
                          << want[at] << ", bound " << bound;
        }
      }
      EXPECT_EQ(n_bad, 0) << dtype_name(t) << " " << s.rows << "x" << cols << ", " << s.n_tokens << " tokens";
    }
}

// Same integers, only the fp32 sums' order may differ: within 1e-5 of sum |w_i x^_i|.
TEST_P(BlockMatmul, MatchesScalarTable) {
  const kernel_table& kt = *GetParam();
  const kernel_table& scalar = *kernel_table_select("scalar");
  std::mt19937 rng(13);
  for (dtype t : all_block_types) {
    const int rows = 21, cols = is_k_format(t) ? 512 : 96, n_tokens = 7;
    const std::vector<std::byte> blocks = random_blocks(t, rows, cols, rng);
    const weight w{blocks.data(), t, rows, cols};
    const quantized_tokens q = quantize(kt, t, random_activations(n_tokens, cols, rng), n_tokens, cols);
    const std::vector<float> got = run_table(kt, w, q, n_tokens), want = run_table(scalar, w, q, n_tokens);
    std::vector<float> row(cols);
    for (int o = 0; o < rows; ++o) {
      dequantize_blocks(t, row.data(), blocks.data() + o * block_row_bytes(t, cols), cols);
      for (int i = 0; i < n_tokens; ++i) {
        const std::vector<float> xh = dequantized_activations(t, q.xq.data() + i * q.row_bytes, cols);
        double mag = 0.0;
        for (int c = 0; c < cols; ++c) mag += std::fabs(row[c] * xh[c]);
        const std::size_t at = static_cast<std::size_t>(i) * rows + o;
        EXPECT_NEAR(got[at], want[at], 1e-5 * mag) << dtype_name(t) << " row " << o << " token " << i;
      }
    }
  }
}

// A token's outputs have the same bits alone and in any batch of 1..33 tokens at any position, and
// whatever range of rows a call covers.
TEST_P(BlockMatmul, BatchInvariant) {
  const kernel_table& kt = *GetParam();
  std::mt19937 rng(17);
  const int n_tokens = 33, rows = 23;
  for (dtype t : all_block_types) {
    const int cols = is_k_format(t) ? 256 : 96;  // 3 blocks of 32: dot32's even/odd chains and a tail
    const std::vector<std::byte> blocks = random_blocks(t, rows, cols, rng);
    const weight w{blocks.data(), t, rows, cols};
    const quantized_tokens q = quantize(kt, t, random_activations(n_tokens, cols, rng), n_tokens, cols);
    std::vector<float> alone(static_cast<std::size_t>(n_tokens) * rows);
    for (int i = 0; i < n_tokens; ++i)
      kt.matmul_blocks(alone.data() + static_cast<std::size_t>(i) * rows, q.xq.data() + i * q.row_bytes, w, 1, 0, rows);
    for (int batch = 1; batch <= n_tokens; ++batch)
      for (const int first : {0, n_tokens - batch, (n_tokens - batch) / 2}) {
        std::vector<float> out(static_cast<std::size_t>(batch) * rows);
        const int split = (batch * 7) % rows;  // two calls, rows [0, split) and [split, rows)
        kt.matmul_blocks(out.data(), q.xq.data() + first * q.row_bytes, w, batch, 0, split);
        kt.matmul_blocks(out.data(), q.xq.data() + first * q.row_bytes, w, batch, split, rows);
        for (int i = 0; i < batch; ++i)
          for (int o = 0; o < rows; ++o)
            ASSERT_EQ(std::bit_cast<std::uint32_t>(out[static_cast<std::size_t>(i) * rows + o]),
                      std::bit_cast<std::uint32_t>(alone[static_cast<std::size_t>(first + i) * rows + o]))
                << dtype_name(t) << ": token " << first + i << " in a batch of " << batch << " at " << i << ", row " << o;
      }
  }
}

// ops::matmul and matmul_group over block weights: the table's bits, whatever the batch; a group mixing
// formats of all three activation kinds gives each output what matmul alone gives it.
TEST_P(BlockMatmul, OpsMatchTableAndGroup) {
  const kernel_table& kt = *GetParam();
  std::mt19937 rng(19);
  const int cols = 512, n_tokens = 40;
  const dtype types[] = {dtype::q4_0, dtype::q4_k, dtype::q5_1, dtype::q6_k};
  const int rows[] = {70, 33, 16, 129};
  std::vector<std::vector<std::byte>> blocks;
  std::vector<weight> ws;
  for (int k = 0; k < 4; ++k) {
    blocks.push_back(random_blocks(types[k], rows[k], cols, rng));
    ws.push_back({blocks.back().data(), types[k], rows[k], cols});
  }
  const std::vector<float> x = random_activations(n_tokens, cols, rng);
  std::vector<std::vector<float>> group_out(4);
  std::vector<ops::matmul_output> outputs;
  for (int k = 0; k < 4; ++k) {
    group_out[k].assign(static_cast<std::size_t>(n_tokens) * rows[k], NAN);
    outputs.push_back({group_out[k].data(), ws[k]});
  }
  ops::matmul_group(kt, outputs, x.data(), n_tokens);
  for (int k = 0; k < 4; ++k) {
    const std::vector<float> table = run_table(kt, ws[k], quantize(kt, types[k], x, n_tokens, cols), n_tokens);
    std::vector<float> one(table.size());
    ops::matmul(kt, one.data(), x.data(), ws[k], n_tokens);
    EXPECT_EQ(std::memcmp(one.data(), table.data(), one.size() * 4), 0) << dtype_name(types[k]);
    EXPECT_EQ(std::memcmp(group_out[k].data(), table.data(), one.size() * 4), 0) << dtype_name(types[k]);
    std::vector<float> single(rows[k]);
    ops::matmul(kt, single.data(), x.data() + 5 * cols, ws[k], 1);
    EXPECT_EQ(std::memcmp(single.data(), table.data() + 5 * rows[k], rows[k] * 4), 0) << dtype_name(types[k]);
  }
}

INSTANTIATE_TEST_SUITE_P(Tables, BlockMatmul, ::testing::ValuesIn(supported_tables()),
                         [](const ::testing::TestParamInfo<const kernel_table*>& info) {
                           return std::string(isa_name(info.param->which));
                         });

}  // namespace
}  // namespace pagedserve::kernels
