// Paged attention over sequences long enough for several softmax groups (kv_group_blocks blocks each),
// over f32, f16, q8 and fp8 caches written by kv_cache::store: every table against the reference over
// the same cache, q8 and fp8 against f32 attention within quantization error, and batch invariance.
#include <gtest/gtest.h>

#include <cstring>
#include <numeric>
#include <random>
#include <vector>

#include "kernels/kernel_test_support.hpp"
#include "kv/kv_cache.hpp"

namespace pagedserve::kernels {
namespace {

constexpr int block_size = 16, n_heads = 8, n_kv_heads = 2;

// A one-layer cache of `type` holding `lens` sequences (random keys and values, shuffled blocks).
struct filled_cache {
  kv_cache cache;
  std::vector<std::int32_t> tables, offsets;

  filled_cache(const std::vector<int>& lens, int head_size, dtype type, std::mt19937& rng)
      : cache(1, blocks_for(lens) + 2, block_size, n_kv_heads, head_size, type) {
    std::vector<std::int32_t> free_blocks(cache.n_blocks());
    std::iota(free_blocks.begin(), free_blocks.end(), 0);
    std::shuffle(free_blocks.begin(), free_blocks.end(), std::mt19937(7));  // same tables for every type
    int next = 0;
    const kernel_table& kt = *kernel_table_select();
    const int kv_dim = n_kv_heads * head_size;
    for (int len : lens) {
      offsets.push_back(static_cast<std::int32_t>(tables.size()));
      for (int b = 0; b < (len + block_size - 1) / block_size; ++b) tables.push_back(free_blocks[next++]);
      for (int p = 0; p < len; ++p) {
        const auto k = random_vector(kv_dim, rng, -2.0f, 2.0f), v = random_vector(kv_dim, rng);
        const int block = tables[offsets.back() + p / block_size];
        cache.store(kt, 0, block * block_size + p % block_size, k.data(), v.data());
      }
    }
  }
  static int blocks_for(const std::vector<int>& lens) {
    int n = 0;
    for (int len : lens) n += (len + block_size - 1) / block_size;
    return n;
  }
};

// A step of (sequence, position) tokens against a filled cache.
struct attention_step {
  std::vector<std::int32_t> seq_of, pos_of;
  std::vector<float> q;
  int max_context = 0;
  int window = 0;

  attention_step(const std::vector<std::pair<int, int>>& tokens, const std::vector<float>& q_all, int dim) {
    for (auto [seq, pos] : tokens) {
      seq_of.push_back(seq), pos_of.push_back(pos);
      q.insert(q.end(), q_all.begin() + static_cast<std::ptrdiff_t>(pos) * dim,
               q_all.begin() + static_cast<std::ptrdiff_t>(pos + 1) * dim);
      max_context = std::max(max_context, pos + 1);
    }
  }
  attention_batch batch(const filled_cache& c) const {
    return {seq_of.data(), pos_of.data(), c.tables.data(), c.offsets.data(), static_cast<int>(seq_of.size()),
            max_context, window};
  }
  std::vector<float> run(const kernel_table& kt, const filled_cache& c, int head_size) const {
    std::vector<float> out(q.size(), -7.0f);
    ops::paged_attention(kt, out.data(), q.data(), c.cache.layer(0), batch(c), n_heads, n_kv_heads, head_size);
    return out;
  }
  std::vector<float> reference(const filled_cache& c, int head_size) const {
    std::vector<float> out(q.size(), 7.0f);
    reference::paged_attention(out.data(), q.data(), c.cache.layer(0), batch(c), n_heads, n_kv_heads, head_size);
    return out;
  }
};

class paged_attention_groups_test : public testing::TestWithParam<const kernel_table*> {
 protected:
  const kernel_table& kt() const { return *GetParam(); }
  std::mt19937 rng_{99};
};

const std::vector<int> lens = {300, 17, 129, 200};  // 19, 2, 9 and 13 blocks: 3, 1, 2 and 2 groups

// Decode tokens at the ends, a prefill chunk across a group boundary, and a token at a group start.
const std::vector<std::pair<int, int>> mixed_step = {{0, 299}, {1, 16}, {2, 120}, {2, 121}, {2, 122}, {2, 123},
                                                     {2, 124}, {2, 125}, {2, 126}, {2, 127}, {2, 128}, {3, 128}};

TEST_P(paged_attention_groups_test, matches_reference_over_every_cache_type) {
  for (dtype type : kv_cache_types) {
    for (int head_size : {12, 64, 128}) {  // generic, and AVX-512's register-resident paths
      SCOPED_TRACE(std::string(kv_cache_type_name(type)) + " head_size=" + std::to_string(head_size));
      std::mt19937 rng(5);
      const filled_cache c(lens, head_size, type, rng);
      const auto q_all = random_vector(300 * n_heads * head_size, rng_, -2.0f, 2.0f);
      for (int window : {0, 40, 150}) {  // windows starting inside a group, and across two
        attention_step step(mixed_step, q_all, n_heads * head_size);
        step.window = window;
        expect_close(step.run(kt(), c, head_size), step.reference(c, head_size), 300);
      }
    }
  }
}

// The largest |a[i] - b[i]|: how far an approximate cache's outputs are from f32's.
float max_abs_difference(const std::vector<float>& a, const std::vector<float>& b) {
  float e = 0.0f;
  for (std::size_t i = 0; i < a.size(); ++i) e = std::max(e, std::abs(a[i] - b[i]));
  return e;
}

// q8 keys and values are within half a step (max|x| / 254) of f32's: the outputs stay within a bound
// a wrong scale exceeds (checked below by breaking the scales on purpose).
TEST_P(paged_attention_groups_test, q8_is_close_to_f32) {
  constexpr int head_size = 64;
  std::mt19937 rng_f32(5), rng_q8(5);  // the same keys and values
  const filled_cache f32(lens, head_size, dtype::f32, rng_f32);
  filled_cache q8(lens, head_size, dtype::i8, rng_q8);
  const auto q_all = random_vector(300 * n_heads * head_size, rng_, -2.0f, 2.0f);
  const attention_step step(mixed_step, q_all, n_heads * head_size);
  const auto want = step.run(kt(), f32, head_size);
  auto max_error = [&](const std::vector<float>& got) { return max_abs_difference(got, want); };
  constexpr float bound = 0.01f;  // values in [-1, 1]: a step of 1/127, scores shifted by about as much
  EXPECT_LT(max_error(step.run(kt(), q8, head_size)), bound);
  // Every scale 3% off (as a scale from max|x| / 123 would be): the same bound no longer holds.
  const paged_kv_layer at = q8.cache.layer(0);
  const std::size_t n_rows = q8.cache.n_blocks() * at.block_stride / head_size;  // keys' and values'
  for (std::size_t i = 0; i < n_rows; ++i) at.k_scales[i] *= 1.03f;              // k_scales: the layer's first
  EXPECT_GT(max_error(step.run(kt(), q8, head_size)), bound);
}

// fp8 keys and values (scale 1.0) are within half an ulp of f32's: 1/16 of each value for e4m3, 1/8 for
// e5m2. The outputs stay within bounds that values one ulp off (a truncating or misrounding
// conversion, simulated by bumping every stored code's magnitude) exceed.
TEST_P(paged_attention_groups_test, fp8_is_close_to_f32) {
  constexpr int head_size = 64;
  for (auto [type, bound] : {std::pair{dtype::f8_e4m3, 0.05f}, std::pair{dtype::f8_e5m2, 0.1f}}) {
    SCOPED_TRACE(std::string(kv_cache_type_name(type)));
    std::mt19937 rng_f32(5), rng_fp8(5);  // the same keys and values
    const filled_cache f32(lens, head_size, dtype::f32, rng_f32);
    filled_cache fp8(lens, head_size, type, rng_fp8);
    const auto q_all = random_vector(300 * n_heads * head_size, rng_, -2.0f, 2.0f);
    const attention_step step(mixed_step, q_all, n_heads * head_size);
    const auto want = step.run(kt(), f32, head_size);
    auto max_error = [&](const std::vector<float>& got) { return max_abs_difference(got, want); };
    EXPECT_LT(max_error(step.run(kt(), fp8, head_size)), bound);
    const paged_kv_layer at = fp8.cache.layer(0);
    auto* codes = static_cast<std::uint8_t*>(at.k_base);  // keys and values: the layer's whole pool
    for (std::size_t i = 0; i < fp8.cache.n_blocks() * at.block_stride; ++i)
      if ((codes[i] & 0x7f) != 0 && (codes[i] & 0x7f) < 0x7b) ++codes[i];  // away from zero, staying finite
    EXPECT_GT(max_error(step.run(kt(), fp8, head_size)), bound);
  }
}

// A token's output bits are the same alone, beside other sequences, and inside a prefill chunk.
TEST_P(paged_attention_groups_test, is_batch_invariant_over_groups) {
  for (dtype type : kv_cache_types) {
    for (int head_size : {12, 64}) {
      SCOPED_TRACE(std::string(kv_cache_type_name(type)) + " head_size=" + std::to_string(head_size));
      std::mt19937 rng(11);
      const filled_cache c(lens, head_size, type, rng);
      const int dim = n_heads * head_size;
      const auto q_all = random_vector(300 * dim, rng_, -2.0f, 2.0f);
      auto row = [&](const std::vector<float>& out, int i) {
        return std::vector<float>(out.begin() + static_cast<std::ptrdiff_t>(i) * dim,
                                  out.begin() + static_cast<std::ptrdiff_t>(i + 1) * dim);
      };
      const auto alone = attention_step({{2, 128}}, q_all, dim).run(kt(), c, head_size);
      const auto batched = attention_step(mixed_step, q_all, dim).run(kt(), c, head_size);
      EXPECT_EQ(row(batched, 10), row(alone, 0));
      const auto other = attention_step({{0, 299}, {2, 127}, {2, 128}}, q_all, dim).run(kt(), c, head_size);
      EXPECT_EQ(row(other, 2), row(alone, 0));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(all_isas, paged_attention_groups_test, testing::ValuesIn(supported_tables()),
                         [](const testing::TestParamInfo<const kernel_table*>& info) { return std::string(isa_name(info.param->which)); });

}  // namespace
}  // namespace pagedserve::kernels
