// Every kernel table this CPU supports against the scalar reference, on random shapes with odd
// tails, plus the bit-exact batch invariance matmul promises (llama.cpp's test-backend-ops idea).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "pagedserve/kernels.hpp"
#include "model/quantize.hpp"
#include "pagedserve/weight.hpp"
#include "kernel_test_support.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int sizes_in[] = {1, 7, 17, 64, 100, 768, 172};
constexpr int sizes_tokens[] = {1, 3, 5, 33};

class kernel_table_test : public testing::TestWithParam<const kernel_table*> {
 protected:
  const kernel_table& kt() const { return *GetParam(); }
  // paged_attention_is_batch_invariant at one head size, over an fp32 or fp16 K/V pool
  void check_attention_invariance(int head_size, dtype kv_type);
  std::mt19937 rng_{1234};
};

TEST_P(kernel_table_test, matmul_matches_reference) {
  for (int n_in : sizes_in)
    for (int n_tokens : sizes_tokens)
      for (int n_out : {1, 5, 19, 64, 70}) {
        SCOPED_TRACE("n_in=" + std::to_string(n_in) + " n_tokens=" + std::to_string(n_tokens) +
                     " n_out=" + std::to_string(n_out));
        const auto x = random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_);
        const auto w = random_vector(static_cast<std::size_t>(n_out) * n_in, rng_);
        std::vector<float> got(static_cast<std::size_t>(n_tokens) * n_out), want(got.size());
        ops::matmul(kt(), got.data(), x.data(), w.data(), n_tokens, n_in, n_out);
        reference::matmul(want.data(), x.data(), w.data(), n_tokens, n_in, n_out);
        expect_close(got, want, n_in);
      }
}

TEST_P(kernel_table_test, rmsnorm_matches_reference) {
  for (int dim : sizes_in)
    for (int n_rows : sizes_tokens) {
      SCOPED_TRACE("dim=" + std::to_string(dim) + " n_rows=" + std::to_string(n_rows));
      const auto x = random_vector(static_cast<std::size_t>(n_rows) * dim, rng_, -3.0f, 3.0f);
      const auto weight = random_vector(dim, rng_, 0.5f, 1.5f);
      std::vector<float> got(x.size()), want(x.size());
      ops::rmsnorm(kt(), got.data(), x.data(), weight.data(), n_rows, dim, 1e-5f);
      reference::rmsnorm(want.data(), x.data(), weight.data(), n_rows, dim, 1e-5f);
      expect_close(got, want, dim);
    }
}

TEST_P(kernel_table_test, swiglu_matches_reference) {
  for (int dim : sizes_in)
    for (int n_tokens : sizes_tokens) {
      SCOPED_TRACE("dim=" + std::to_string(dim) + " n_tokens=" + std::to_string(n_tokens));
      auto gate = random_vector(static_cast<std::size_t>(n_tokens) * dim, rng_, -12.0f, 12.0f);
      const auto up = random_vector(gate.size(), rng_, -2.0f, 2.0f);
      std::vector<float> want = gate;
      ops::swiglu(kt(), gate.data(), up.data(), n_tokens, dim);
      reference::swiglu(want.data(), up.data(), static_cast<int>(want.size()));
      // Elementwise, so a pure relative bound: the exp polynomial must be accurate to ~1e-6.
      for (std::size_t i = 0; i < gate.size(); ++i)
        ASSERT_NEAR(gate[i], want[i], 1e-6f * std::abs(want[i]) + 1e-30f) << "element " << i;
    }
}

TEST_P(kernel_table_test, swiglu_extreme_inputs_stay_finite) {
  std::vector<float> gate = {-1e30f, -1000.0f, -104.5f, -100.0f, -89.0f, -88.5f, -87.0f, -50.0f, -20.0f, -1e-20f,
                             0.0f,   1e-20f,   20.0f,   50.0f,   87.0f,  88.5f,  89.0f,  100.0f, 1000.0f, 1e30f};
  const std::vector<float> up(gate.size(), 0.75f), inputs = gate;
  std::vector<float> want = gate;
  kt().swiglu(gate.data(), up.data(), static_cast<int>(gate.size()));
  reference::swiglu(want.data(), up.data(), static_cast<int>(want.size()));
  for (std::size_t i = 0; i < gate.size(); ++i) {
    SCOPED_TRACE("g=" + std::to_string(inputs[i]));
    ASSERT_TRUE(std::isfinite(gate[i]));
    EXPECT_NEAR(gate[i], want[i], 1e-6f * std::abs(want[i]) + 1e-30f);
  }
}

TEST_P(kernel_table_test, sum_squares_axpy_match_scalar_loops) {
  for (int n : {1, 3, 8, 12, 15, 16, 17, 31, 33, 63, 64, 65, 100, 768, 172}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    const auto a = random_vector(n, rng_);
    double want_ss = 0.0;
    for (int i = 0; i < n; ++i) want_ss += static_cast<double>(a[i]) * a[i];
    EXPECT_NEAR(kt().sum_squares(a.data(), n), want_ss, 1e-5 * std::sqrt(n) * want_ss);
    // Guard words around y catch masked tails that write past n.
    std::vector<float> y = random_vector(n + 2, rng_), want(y);
    kt().axpy(y.data() + 1, 0.37f, a.data(), n);
    for (int i = 0; i < n; ++i) want[i + 1] += 0.37f * a[i];
    expect_close(y, want, 1);
  }
}

// A K/V pool stored as fp16 (f32_to_f16 of an fp32 pool), and its values widened back to fp32.
struct f16_pool {
  std::vector<std::uint16_t> bits;
  std::vector<float> widened;
  explicit f16_pool(const std::vector<float>& values) {
    for (float x : values) {
      bits.push_back(f32_to_f16(x));
      widened.push_back(f16_to_f32(bits.back()));
    }
  }
};

// How keys and values enter an fp16 cache: every table rounds as f32_to_f16 does (NaN stays NaN),
// at every length (the tails).
TEST_P(kernel_table_test, f32_to_f16_row_rounds_to_nearest_even) {
  std::vector<float> x = random_vector(300, rng_, -70000.0f, 70000.0f);
  const float edges[] = {0.0f, -0.0f, 1.0f, -2.5f, 65504.0f, 65519.0f, 65520.0f, -1e9f, 6.1e-5f, 5.96e-8f, 2.98e-8f,
                         2.99e-8f, 1e-10f, 1.00048828125f, 1.00146484375f, std::numeric_limits<float>::infinity()};
  for (float e : edges) x.push_back(e), x.push_back(-e);
  for (int i = 0; i < 40; ++i) x.push_back(std::ldexp(1.0f + static_cast<float>(i) / 64, -20 + i));  // subnormal..normal
  for (int n : {1, 7, 8, 9, 15, 16, 17, 33, static_cast<int>(x.size())}) {
    SCOPED_TRACE("n=" + std::to_string(n));
    std::vector<std::uint16_t> got(n + 1, 0xabcd);
    kt().f32_to_f16_row(got.data(), x.data(), n);
    for (int i = 0; i < n; ++i) ASSERT_EQ(got[i], f32_to_f16(x[i])) << "x=" << x[i];
    EXPECT_EQ(got[n], 0xabcd) << "wrote past n";
  }
  const float nan = std::numeric_limits<float>::quiet_NaN();
  std::uint16_t h = 0;
  kt().f32_to_f16_row(&h, &nan, 1);
  EXPECT_TRUE(std::isnan(f16_to_f32(h)));
}

// Builds a paged KV pool with shuffled block tables and a step mixing decode tokens and
// chunked-prefill tokens, then compares ops::paged_attention with the reference. With an fp16 pool,
// also with ops::paged_attention over the pool widened to fp32: the same bits.
void check_paged_attention(const kernel_table& kt, int n_heads, int n_kv_heads, int head_size, std::mt19937& rng,
                           int window = 0, dtype kv_type = dtype::f32) {
  constexpr int block_size = 16;
  const int kv_dim = n_kv_heads * head_size;
  // (sequence length, tokens of this step at its end): decode steps and prefill chunks.
  const std::vector<std::pair<int, int>> seqs = {{1, 1}, {17, 1}, {40, 16}, {5, 5}, {33, 7}, {64, 1}, {100, 3}};
  std::vector<std::int32_t> block_tables, seq_block_offset, seq_of_token, pos_of_token;
  int n_blocks = 0;
  for (auto [len, n_step] : seqs) n_blocks += (len + block_size - 1) / block_size;
  n_blocks += 3;  // unused blocks, so tables do not cover the pool exactly
  std::vector<std::int32_t> free_blocks(n_blocks);
  std::iota(free_blocks.begin(), free_blocks.end(), 0);
  std::shuffle(free_blocks.begin(), free_blocks.end(), rng);
  int next_free = 0, max_context = 0;
  for (std::size_t s = 0; s < seqs.size(); ++s) {
    const auto [len, n_step] = seqs[s];
    seq_block_offset.push_back(static_cast<std::int32_t>(block_tables.size()));
    for (int b = 0; b < (len + block_size - 1) / block_size; ++b) block_tables.push_back(free_blocks[next_free++]);
    for (int p = len - n_step; p < len; ++p) {
      seq_of_token.push_back(static_cast<std::int32_t>(s));
      pos_of_token.push_back(p);
    }
    max_context = std::max(max_context, len);
  }
  const std::size_t block_stride = static_cast<std::size_t>(block_size) * kv_dim;
  auto k_pool = random_vector(n_blocks * block_stride, rng, -2.0f, 2.0f);
  auto v_pool = random_vector(n_blocks * block_stride, rng);
  f16_pool k16(k_pool), v16(v_pool);
  const paged_kv_layer kv = kv_type == dtype::f16
                                ? paged_kv_layer{k16.bits.data(), v16.bits.data(), block_stride, block_size, head_size, dtype::f16}
                                : paged_kv_layer{k_pool.data(), v_pool.data(), block_stride, block_size, head_size};
  const int n_tokens = static_cast<int>(seq_of_token.size());
  const attention_batch batch{seq_of_token.data(), pos_of_token.data(), block_tables.data(),
                              seq_block_offset.data(), n_tokens, max_context, window};
  const int dim = n_heads * head_size;
  const auto q = random_vector(static_cast<std::size_t>(n_tokens) * dim, rng, -2.0f, 2.0f);
  std::vector<float> got(q.size(), -7.0f), want(q.size(), 7.0f);
  ops::paged_attention(kt, got.data(), q.data(), kv, batch, n_heads, n_kv_heads, head_size);
  reference::paged_attention(want.data(), q.data(), kv, batch, n_heads, n_kv_heads, head_size);
  expect_close(got, want, std::max(max_context, head_size));
  if (kv_type == dtype::f16) {
    const paged_kv_layer widened{k16.widened.data(), v16.widened.data(), block_stride, block_size, head_size};
    std::vector<float> got_widened(q.size());
    ops::paged_attention(kt, got_widened.data(), q.data(), widened, batch, n_heads, n_kv_heads, head_size);
    EXPECT_EQ(0, std::memcmp(got.data(), got_widened.data(), got.size() * sizeof(float)))
        << "fp16 K/V must give the bits of the same values widened to fp32";
  }
}

TEST_P(kernel_table_test, paged_attention_matches_reference) {
  for (int head_size : {8, 12, 64, 128}) {  // 64 and 128: AVX-512's register-resident attend_group
    SCOPED_TRACE("GQA 8/4 head_size=" + std::to_string(head_size));
    check_paged_attention(kt(), 8, 4, head_size, rng_);
  }
  SCOPED_TRACE("MHA 4/4 head_size=12");
  check_paged_attention(kt(), 4, 4, 12, rng_);
  for (int head_size : {12, 64, 128}) {  // the fp16 cache: generic and register-resident paths
    SCOPED_TRACE("fp16 K/V, GQA 8/2 head_size=" + std::to_string(head_size));
    check_paged_attention(kt(), 8, 2, head_size, rng_, 0, dtype::f16);
  }
  for (int window : {1, 5, 16, 21}) {  // sliding windows inside, at and across block boundaries
    SCOPED_TRACE("window " + std::to_string(window));
    check_paged_attention(kt(), 8, 2, 16, rng_, window);
  }
}

// A query row's attention output is bit-identical whatever tile it lands in: alone as a decode token,
// or at any offset of a prefill chunk, beside other sequences or not.
TEST_P(kernel_table_test, paged_attention_is_batch_invariant) {
  for (dtype kv_type : {dtype::f32, dtype::f16}) {
    for (int head_size : {16, 64, 128}) {  // the generic and both register-resident AVX-512 paths
      SCOPED_TRACE(std::string(dtype_name(kv_type)) + " K/V, head_size=" + std::to_string(head_size));
      check_attention_invariance(head_size, kv_type);
    }
  }
}

void kernel_table_test::check_attention_invariance(int head_size, dtype kv_type) {
  constexpr int block_size = 16, n_heads = 8, n_kv_heads = 2, len = 45;
  const int kv_dim = n_kv_heads * head_size, dim = n_heads * head_size;
  const std::size_t block_stride = static_cast<std::size_t>(block_size) * kv_dim;
  const int n_blocks = 8;
  auto k_pool = random_vector(n_blocks * block_stride, rng_, -2.0f, 2.0f);
  auto v_pool = random_vector(n_blocks * block_stride, rng_);
  f16_pool k16(k_pool), v16(v_pool);
  const paged_kv_layer kv = kv_type == dtype::f16
                                ? paged_kv_layer{k16.bits.data(), v16.bits.data(), block_stride, block_size, head_size, dtype::f16}
                                : paged_kv_layer{k_pool.data(), v_pool.data(), block_stride, block_size, head_size};
  const std::vector<std::int32_t> tables = {5, 1, 7, 2, 0, 3};  // sequence 0: blocks 5 1 7; sequence 1: 2 0 3
  const auto q_all = random_vector(static_cast<std::size_t>(len) * dim, rng_, -2.0f, 2.0f);  // a query per position

  // Runs the given (sequence, position) tokens as one step; returns each token's output row.
  auto run = [&](const std::vector<std::pair<int, int>>& tokens) {
    std::vector<std::int32_t> seq_of, pos_of;
    std::vector<float> q;
    int max_context = 0;
    for (auto [seq, pos] : tokens) {
      seq_of.push_back(seq);
      pos_of.push_back(pos);
      q.insert(q.end(), q_all.begin() + static_cast<std::ptrdiff_t>(pos) * dim,
               q_all.begin() + static_cast<std::ptrdiff_t>(pos + 1) * dim);
      max_context = std::max(max_context, pos + 1);
    }
    const std::int32_t offsets[] = {0, 3};
    const attention_batch batch{seq_of.data(), pos_of.data(), tables.data(), offsets,
                                static_cast<int>(tokens.size()), max_context};
    std::vector<float> out(q.size());
    ops::paged_attention(kt(), out.data(), q.data(), kv, batch, n_heads, n_kv_heads, head_size);
    return out;
  };
  auto row = [&](const std::vector<float>& out, int i) {
    return std::vector<float>(out.begin() + static_cast<std::ptrdiff_t>(i) * dim,
                              out.begin() + static_cast<std::ptrdiff_t>(i + 1) * dim);
  };
  const auto alone = run({{0, 40}});
  std::vector<std::pair<int, int>> chunk;  // positions 29..44 of sequence 0 behind a decode of sequence 1
  chunk.push_back({1, 20});
  for (int p = 29; p < len; ++p) chunk.push_back({0, p});
  const auto batched = run(chunk);
  EXPECT_EQ(row(batched, 1 + (40 - 29)), row(alone, 0));
  std::vector<std::pair<int, int>> other_split;  // positions 37..44 only
  for (int p = 37; p < len; ++p) other_split.push_back({0, p});
  const auto split = run(other_split);
  EXPECT_EQ(row(split, 40 - 37), row(alone, 0));
  EXPECT_EQ(row(split, 44 - 37), row(batched, 1 + (44 - 29)));
}

// out rows must not depend on which tokens share the step nor on how the output rows are split.
TEST_P(kernel_table_test, matmul_is_batch_invariant) {
  constexpr int n_batch = 37;
  for (int n_in : {1, 17, 100, 768, 172}) {
    const int n_out = 45;
    SCOPED_TRACE("n_in=" + std::to_string(n_in));
    const auto x = random_vector(static_cast<std::size_t>(n_batch) * n_in, rng_);
    const auto w = random_vector(static_cast<std::size_t>(n_out) * n_in, rng_);
    std::vector<float> batched(static_cast<std::size_t>(n_batch) * n_out);
    ops::matmul(kt(), batched.data(), x.data(), w.data(), n_batch, n_in, n_out);
    std::vector<float> alone(n_out);
    for (int t = 0; t < n_batch; ++t) {
      ops::matmul(kt(), alone.data(), x.data() + static_cast<std::size_t>(t) * n_in, w.data(), 1, n_in, n_out);
      for (int o = 0; o < n_out; ++o) ASSERT_EQ(alone[o], batched[static_cast<std::size_t>(t) * n_out + o]) << "t=" << t << " o=" << o;
      EXPECT_EQ(0, std::memcmp(alone.data(), batched.data() + static_cast<std::size_t>(t) * n_out, n_out * sizeof(float)));
    }
    // Every smaller batch starting at each offset (all token-group tail sizes) matches too.
    for (int n_sub : {2, 3, 4, 5, 6, 7}) {
      std::vector<float> sub(static_cast<std::size_t>(n_sub) * n_out);
      for (int t0 : {0, 1, n_batch - n_sub}) {
        ops::matmul(kt(), sub.data(), x.data() + static_cast<std::size_t>(t0) * n_in, w.data(), n_sub, n_in, n_out);
        ASSERT_EQ(0, std::memcmp(sub.data(), batched.data() + static_cast<std::size_t>(t0) * n_out, sub.size() * sizeof(float)))
            << "n_sub=" << n_sub << " t0=" << t0;
      }
    }
    // Output rows split at odd places, through the table and through ops on a slice of w.
    std::vector<float> split(batched.size(), 0.0f);
    const int cuts[] = {0, 1, 6, 13, 14, 31, n_out};
    for (std::size_t c = 0; c + 1 < std::size(cuts); ++c)
      kt().matmul_rows(split.data(), x.data(), w.data(), n_batch, n_in, n_out, cuts[c], cuts[c + 1]);
    ASSERT_EQ(0, std::memcmp(split.data(), batched.data(), batched.size() * sizeof(float)));
    for (std::size_t c = 0; c + 1 < std::size(cuts); ++c) {
      const int n_slice = cuts[c + 1] - cuts[c];
      std::vector<float> slice(static_cast<std::size_t>(n_batch) * n_slice);
      ops::matmul(kt(), slice.data(), x.data(), w.data() + static_cast<std::size_t>(cuts[c]) * n_in, n_batch, n_in, n_slice);
      for (int t = 0; t < n_batch; ++t)
        ASSERT_EQ(0, std::memcmp(slice.data() + static_cast<std::size_t>(t) * n_slice,
                                 batched.data() + static_cast<std::size_t>(t) * n_out + cuts[c], n_slice * sizeof(float)))
            << "slice " << c << " t=" << t;
    }
  }
}

// A random matrix stored as bf16 or fp16, and the same values widened to fp32.
struct half_matrix {
  std::vector<std::uint16_t> bits;
  std::vector<float> widened;
};

half_matrix random_half_matrix(std::size_t n, dtype type, std::mt19937& rng) {
  half_matrix m{std::vector<std::uint16_t>(n), std::vector<float>(n)};
  const auto v = random_vector(n, rng);
  for (std::size_t i = 0; i < n; ++i) {
    m.bits[i] = type == dtype::bf16 ? f32_to_bf16(v[i]) : f32_to_f16(v[i]);
    m.widened[i] = type == dtype::bf16 ? bf16_to_f32(m.bits[i]) : f16_to_f32(m.bits[i]);
  }
  return m;
}

// bf16/fp16 weights: the reference agrees, and the result is bit-identical to the fp32 kernel on the
// widened matrix, so the 16-bit paths inherit its batch invariance (checked again directly below).
// A table whose bf16 matmul rounds the activations (AVX512-BF16 dot products) instead agrees with
// the reference over bf16-rounded activations, to fp32 summation error.
TEST_P(kernel_table_test, half_matmul_matches_fp32_path_bit_for_bit) {
  for (dtype type : {dtype::bf16, dtype::f16})
    for (int n_in : sizes_in)
      for (int n_tokens : {1, 2, 3, 5, 33})
        for (int n_out : {1, 5, 19, 70}) {
          SCOPED_TRACE(std::string(dtype_name(type)) + " n_in=" + std::to_string(n_in) +
                       " n_tokens=" + std::to_string(n_tokens) + " n_out=" + std::to_string(n_out));
          const auto x = random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_);
          const half_matrix w = random_half_matrix(static_cast<std::size_t>(n_out) * n_in, type, rng_);
          const weight wv{w.bits.data(), type, n_out, n_in};
          std::vector<float> got(static_cast<std::size_t>(n_tokens) * n_out), want(got.size()), fp32(got.size());
          ops::matmul(kt(), got.data(), x.data(), wv, n_tokens);
          if (type == dtype::bf16 && kt().bf16_rounds_activations) {
            std::vector<float> x_rounded(x);
            for (float& v : x_rounded) v = bf16_to_f32(f32_to_bf16(v));
            reference::matmul(want.data(), x_rounded.data(), wv, n_tokens);
            expect_close(got, want, n_in);
            reference::matmul(want.data(), x.data(), wv, n_tokens);
            expect_close(got, want, n_in, 1e-2f);  // within bf16 rounding of the exact product
            continue;
          }
          reference::matmul(want.data(), x.data(), wv, n_tokens);
          expect_close(got, want, n_in);
          ops::matmul(kt(), fp32.data(), x.data(), w.widened.data(), n_tokens, n_in, n_out);
          ASSERT_EQ(0, std::memcmp(got.data(), fp32.data(), got.size() * sizeof(float)));
        }
}

TEST_P(kernel_table_test, half_matmul_is_batch_invariant) {
  constexpr int n_batch = 23, n_in = 172, n_out = 45;
  for (dtype type : {dtype::bf16, dtype::f16}) {
    SCOPED_TRACE(std::string(dtype_name(type)));
    const auto x = random_vector(static_cast<std::size_t>(n_batch) * n_in, rng_);
    const half_matrix w = random_half_matrix(static_cast<std::size_t>(n_out) * n_in, type, rng_);
    const weight wv{w.bits.data(), type, n_out, n_in};
    std::vector<float> batched(static_cast<std::size_t>(n_batch) * n_out), alone(n_out);
    ops::matmul(kt(), batched.data(), x.data(), wv, n_batch);
    for (int t = 0; t < n_batch; ++t) {
      ops::matmul(kt(), alone.data(), x.data() + static_cast<std::size_t>(t) * n_in, wv, 1);
      ASSERT_EQ(0, std::memcmp(alone.data(), batched.data() + static_cast<std::size_t>(t) * n_out, n_out * sizeof(float)))
          << "t=" << t;
    }
  }
}

// A group of matmuls (QKV, gate/up) gives each output the bits of its own matmul, for every dtype,
// a mix of them, outputs whose rows end mid-tile, and any token count.
TEST_P(kernel_table_test, matmul_group_matches_separate_matmuls_bit_for_bit) {
  constexpr int n_in = 172;
  const int rows[] = {70, 19, 33};
  std::vector<float> f32[3];
  std::vector<std::uint16_t> bf16[3];
  i8_matrix i8[3];
  weight as[3][3];  // [f32, bf16, i8][output]
  for (int j = 0; j < 3; ++j) {
    f32[j] = random_vector(static_cast<std::size_t>(rows[j]) * n_in, rng_);
    for (float v : f32[j]) bf16[j].push_back(f32_to_bf16(v));
    as[0][j] = weight_f32(f32[j].data(), rows[j], n_in);
    as[1][j] = weight{bf16[j].data(), dtype::bf16, rows[j], n_in};
    i8[j] = quantize_matrix_i8(as[0][j]);
    as[2][j] = i8[j].view();
  }
  const weight mixed[3] = {as[2][0], as[0][1], as[1][2]};
  for (int n_tokens : {1, 5, 33})
    for (const weight* ws : std::initializer_list<const weight*>{as[0], as[1], as[2], mixed}) {
      SCOPED_TRACE("n_tokens=" + std::to_string(n_tokens) + " first dtype " + std::string(dtype_name(ws[0].type)));
      const auto x = random_vector(static_cast<std::size_t>(n_tokens) * n_in, rng_);
      std::vector<float> got[3], want[3];
      ops::matmul_output outs[3];
      for (int j = 0; j < 3; ++j) {
        got[j].assign(static_cast<std::size_t>(n_tokens) * rows[j], 0.0f);
        want[j] = got[j];
        outs[j] = {got[j].data(), ws[j]};
        ops::matmul(kt(), want[j].data(), x.data(), ws[j], n_tokens);
      }
      ops::matmul_group(kt(), outs, x.data(), n_tokens);
      for (int j = 0; j < 3; ++j)
        ASSERT_EQ(0, std::memcmp(got[j].data(), want[j].data(), got[j].size() * sizeof(float))) << "output " << j;
    }
}

// The fused residual add + norm is the add followed by the norm, to the bit.
TEST_P(kernel_table_test, add_rmsnorm_equals_add_then_rmsnorm) {
  for (int dim : sizes_in)
    for (int n_tokens : {1, 5, 64}) {
      SCOPED_TRACE("dim=" + std::to_string(dim) + " n_tokens=" + std::to_string(n_tokens));
      const auto x0 = random_vector(static_cast<std::size_t>(n_tokens) * dim, rng_, -3.0f, 3.0f);
      const auto y = random_vector(x0.size(), rng_, -3.0f, 3.0f);
      const auto weight = random_vector(dim, rng_, 0.5f, 1.5f);
      std::vector<float> x = x0, out(x0.size()), want_x = x0, want(x0.size());
      ops::add_rmsnorm(kt(), out.data(), x.data(), y.data(), weight.data(), n_tokens, dim, 1e-5f);
      ops::add(want_x.data(), y.data(), n_tokens, dim);
      ops::rmsnorm(kt(), want.data(), want_x.data(), weight.data(), n_tokens, dim, 1e-5f);
      ASSERT_EQ(x, want_x);
      ASSERT_EQ(0, std::memcmp(out.data(), want.data(), out.size() * sizeof(float)));
      for (std::size_t i = 0; i < x0.size(); ++i) ASSERT_EQ(x[i], x0[i] + y[i]);
    }
}

INSTANTIATE_TEST_SUITE_P(all_isas, kernel_table_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) {
                           return std::string(isa_name(info.param->which));
                         });

// Interleaved RoPE through the step table matches run.c's RoPE (reference::rope with theta), up to
// the reordering of each head into rotate-half order.
TEST(kernels, rope_matches_run_c_reference) {
  std::mt19937 rng(99);
  std::uniform_int_distribution<std::int32_t> pos_dist(0, 4095);
  for (int head_size : {8, 12, 64})
    for (int n_tokens : sizes_tokens) {
      SCOPED_TRACE("head_size=" + std::to_string(head_size) + " n_tokens=" + std::to_string(n_tokens));
      const int n_heads = 8, half = head_size / 2;
      auto got = random_vector(static_cast<std::size_t>(n_tokens) * n_heads * head_size, rng);
      auto want = got;
      std::vector<std::int32_t> positions(n_tokens);
      for (auto& p : positions) p = pos_dist(rng);
      std::vector<float> inv_freq(half), cos(static_cast<std::size_t>(n_tokens) * half), sin(cos.size());
      for (int i = 0; i < half; ++i) inv_freq[i] = 1.0f / std::pow(10000.0f, (2 * i) / static_cast<float>(head_size));
      ops::rope_angles(cos.data(), sin.data(), positions.data(), n_tokens, inv_freq.data(), half);
      ops::rope(got.data(), cos.data(), sin.data(), n_tokens, n_heads, head_size, rope_style::interleaved);
      reference::rope(want.data(), positions.data(), n_tokens, n_heads, head_size, 10000.0f);
      std::vector<float> want_halves(want.size());
      for (std::size_t h = 0; h < want.size() / head_size; ++h)
        for (int i = 0; i < half; ++i) {
          want_halves[h * head_size + i] = want[h * head_size + 2 * i];
          want_halves[h * head_size + half + i] = want[h * head_size + 2 * i + 1];
        }
      expect_close(got, want_halves, 1);
    }
}

// The step-table RoPE (both pairings) against the reference that computes each angle itself.
TEST(kernels, rope_table_matches_reference_both_styles) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<std::int32_t> pos_dist(0, 40000);
  for (rope_style style : {rope_style::interleaved, rope_style::neox})
    for (int head_size : {8, 64, 128})
      for (int n_tokens : sizes_tokens) {
        SCOPED_TRACE("head_size=" + std::to_string(head_size) + " n_tokens=" + std::to_string(n_tokens));
        const int n_heads = 3, half = head_size / 2;
        auto got = random_vector(static_cast<std::size_t>(n_tokens) * n_heads * head_size, rng);
        auto want = got;
        std::vector<std::int32_t> positions(n_tokens);
        for (auto& p : positions) p = pos_dist(rng);
        std::vector<float> inv_freq(half);
        for (int i = 0; i < half; ++i) inv_freq[i] = 1.0f / std::pow(500000.0f, 2.0f * i / head_size);
        std::vector<float> cos(static_cast<std::size_t>(n_tokens) * half), sin(cos.size());
        ops::rope_angles(cos.data(), sin.data(), positions.data(), n_tokens, inv_freq.data(), half);
        ops::rope(got.data(), cos.data(), sin.data(), n_tokens, n_heads, head_size, style);
        reference::rope(want.data(), positions.data(), n_tokens, n_heads, head_size, inv_freq.data(), style);
        ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)));
      }
}

// Interleaved RoPE on a head equals rotate-half RoPE on the head with its rows permuted as the
// llama2.c -> HF converter permutes Wq/Wk, bit for bit (both write rotate-half order).
TEST(kernels, rope_interleaved_equals_neox_under_the_hf_permutation) {
  std::mt19937 rng(8);
  const int head_size = 16, half = 8, n_heads = 2, n_tokens = 3;
  const std::int32_t pos[n_tokens] = {0, 37, 1000};
  std::vector<float> inv_freq(half), cos(n_tokens * half), sin(cos.size());
  for (int i = 0; i < half; ++i) inv_freq[i] = 1.0f / std::pow(10000.0f, 2.0f * i / head_size);
  ops::rope_angles(cos.data(), sin.data(), pos, n_tokens, inv_freq.data(), half);
  auto inter = random_vector(n_tokens * n_heads * head_size, rng);
  std::vector<float> neox(inter.size());
  for (int th = 0; th < n_tokens * n_heads; ++th)
    for (int j = 0; j < 2; ++j)
      for (int i = 0; i < half; ++i) neox[th * head_size + j * half + i] = inter[th * head_size + 2 * i + j];
  auto ref_inter = inter, ref_neox = neox;
  ops::rope(inter.data(), cos.data(), sin.data(), n_tokens, n_heads, head_size, rope_style::interleaved);
  ops::rope(neox.data(), cos.data(), sin.data(), n_tokens, n_heads, head_size, rope_style::neox);
  reference::rope(ref_inter.data(), pos, n_tokens, n_heads, head_size, inv_freq.data(), rope_style::interleaved);
  reference::rope(ref_neox.data(), pos, n_tokens, n_heads, head_size, inv_freq.data(), rope_style::neox);
  EXPECT_EQ(inter, neox);
  EXPECT_EQ(ref_inter, ref_neox);
  EXPECT_EQ(inter, ref_inter);
}

// Exact widening and round-to-nearest-even narrowing, including subnormals, overflow and NaN.
TEST(kernels, half_conversions_round_trip_and_round_to_nearest_even) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = f16_to_f32(bits);
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
      continue;
    }
    ASSERT_EQ(f32_to_f16(f), bits) << "f16 0x" << std::hex << h;
    const float b = bf16_to_f32(bits);
    if (!std::isnan(b)) {
      ASSERT_EQ(f32_to_bf16(b), bits) << "bf16 0x" << std::hex << h;
    }
  }
  EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);                 // rounds up to infinity
  EXPECT_EQ(f32_to_f16(1.0f + 1.0f / 2048), 0x3c00);       // tie -> even
  EXPECT_EQ(f32_to_f16(1.0f + 3.0f / 2048), 0x3c02);       // tie -> even (up)
  EXPECT_EQ(f32_to_f16(std::ldexp(1.0f, -25)), 0x0000);    // half the smallest subnormal -> 0 (even)
  EXPECT_EQ(f32_to_f16(std::ldexp(3.0f, -25)), 0x0002);    // 1.5 subnormals -> 2 (even)
  EXPECT_EQ(f32_to_bf16(1.0f + 1.0f / 256), 0x3f80);       // tie -> even
  EXPECT_EQ(f32_to_bf16(1.0f + 3.0f / 256), 0x3f82);
  EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::nanf("")))));
}

TEST(kernels, table_select_by_name) {
  const kernel_table* scalar = kernel_table_select("scalar");
  ASSERT_NE(scalar, nullptr);
  EXPECT_EQ(scalar->which, isa::scalar);
  EXPECT_EQ(kernel_table_select("bogus"), nullptr);
  ASSERT_FALSE(kernel_tables_supported().empty());
  EXPECT_EQ(kernel_table_select("auto"), kernel_tables_supported().front());
  EXPECT_EQ(kernel_table_select(), kernel_tables_supported().front());
  for (const kernel_table* t : kernel_tables_supported()) EXPECT_EQ(kernel_table_select(isa_name(t->which)), t);
  EXPECT_EQ(kernel_tables_supported().back()->which, isa::scalar);
}

}  // namespace
}  // namespace pagedserve::kernels
