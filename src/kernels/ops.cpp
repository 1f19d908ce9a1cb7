// TBB-parallel entry points: split each op over rows, tiles or (token, head) pairs and run the
// selected table's serial inner loops on each piece. The split never changes how an output element
// is reduced, so results are identical for any grain or thread count.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/parallel_for.h>

#include <cmath>
#include <vector>

#include "pagedserve/check.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels::ops {

void matmul(const kernel_table& kt, float* out, const float* x, const float* w, int n_tokens, int n_in,
            int n_out) {
  // Tiles of output rows: each tile's weights are read once for all tokens of the step.
  constexpr int rows_per_tile = 16;
  const int n_tiles = (n_out + rows_per_tile - 1) / rows_per_tile;
  tbb::parallel_for(tbb::blocked_range<int>(0, n_tiles), [&](const tbb::blocked_range<int>& r) {
    const int o_begin = r.begin() * rows_per_tile;
    const int o_end = std::min(n_out, r.end() * rows_per_tile);
    kt.matmul_rows(out, x, w, n_tokens, n_in, n_out, o_begin, o_end);
  });
}

void matmul(const kernel_table& kt, float* out, const float* x, const weight& w, int n_tokens) {
  constexpr int rows_per_tile = 16;
  const int n_in = w.cols, n_out = w.rows;
  const int n_tiles = (n_out + rows_per_tile - 1) / rows_per_tile;
  tbb::parallel_for(tbb::blocked_range<int>(0, n_tiles), [&](const tbb::blocked_range<int>& r) {
    const int o_begin = r.begin() * rows_per_tile;
    const int o_end = std::min(n_out, r.end() * rows_per_tile);
    switch (w.type) {
      case dtype::f32: kt.matmul_rows(out, x, w.f32(), n_tokens, n_in, n_out, o_begin, o_end); break;
      case dtype::bf16: kt.matmul_rows_bf16(out, x, w.u16(), n_tokens, n_in, n_out, o_begin, o_end); break;
      case dtype::f16: kt.matmul_rows_f16(out, x, w.u16(), n_tokens, n_in, n_out, o_begin, o_end); break;
    }
  });
}

void add_bias(float* x, const float* bias, int n_tokens, int n) {
  tbb::parallel_for(0, n_tokens, [&](int t) {
    float* xt = x + static_cast<std::size_t>(t) * n;
    for (int i = 0; i < n; ++i) xt[i] += bias[i];
  });
}

void rmsnorm(const kernel_table& kt, float* out, const float* x, const float* weight, int n_rows, int dim,
             float eps) {
  tbb::parallel_for(0, n_rows, [&](int r) {
    const float* xr = x + static_cast<std::size_t>(r) * dim;
    const float scale = 1.0f / std::sqrt(kt.sum_squares(xr, dim) / dim + eps);
    kt.scale_mul(out + static_cast<std::size_t>(r) * dim, xr, weight, scale, dim);
  });
}

void rope_angles(float* cos, float* sin, const std::int32_t* positions, int n_tokens, const float* inv_freq,
                 int n_freq) {
  // The reference's arithmetic: angle = pos * inv_freq[i] in fp32, then cos and sin of it.
  tbb::parallel_for(0, n_tokens, [&](int t) {
    for (int i = 0; i < n_freq; ++i) {
      const float angle = positions[t] * inv_freq[i];
      cos[static_cast<std::size_t>(t) * n_freq + i] = std::cos(angle);
      sin[static_cast<std::size_t>(t) * n_freq + i] = std::sin(angle);
    }
  });
}

void rope(float* x, const float* cos, const float* sin, int n_tokens, int n_heads, int head_size, rope_style style) {
  const int half = head_size / 2;
  ps_check(head_size <= 1024, "rope: head size above 1024");
  tbb::parallel_for(0, n_tokens, [&](int t) {
    float* xt = x + static_cast<std::size_t>(t) * n_heads * head_size;
    const float* ct = cos + static_cast<std::size_t>(t) * half;
    const float* st = sin + static_cast<std::size_t>(t) * half;
    float in[1024];
    for (int h = 0; h < n_heads; ++h) {
      float* v = xt + h * head_size;
      // Pair i is (2i, 2i+1) or (i, i+half) on input; (i, i+half) on output.
      const int step = style == rope_style::interleaved ? 2 : 1;
      const int partner = style == rope_style::interleaved ? 1 : half;
      std::copy(v, v + head_size, in);
      for (int i = 0; i < half; ++i) {
        const float v0 = in[i * step], v1 = in[i * step + partner];
        v[i] = v0 * ct[i] - v1 * st[i];
        v[i + half] = v0 * st[i] + v1 * ct[i];
      }
    }
  });
}

void swiglu(const kernel_table& kt, float* gate, const float* up, int n_tokens, int dim) {
  tbb::parallel_for(0, n_tokens, [&](int t) {
    kt.swiglu(gate + static_cast<std::size_t>(t) * dim, up + static_cast<std::size_t>(t) * dim, dim);
  });
}

void paged_attention(const kernel_table& kt, float* out, const float* q, const paged_kv_layer& kv,
                     const attention_batch& batch, int n_heads, int n_kv_heads, int head_size) {
  const int dim = n_heads * head_size;
  const int group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  // One score buffer per worker thread, grown to the longest context seen; reused across steps.
  static tbb::enumerable_thread_specific<std::vector<float>> score_buffers;
  tbb::parallel_for(0, batch.n_tokens * n_heads, [&](int th) {
    const int t = th / n_heads, h = th % n_heads;
    std::vector<float>& scores = score_buffers.local();
    if (scores.size() < static_cast<std::size_t>(batch.max_context)) scores.resize(batch.max_context);
    const int seq = batch.seq_of_token[t];
    const int n_ctx = batch.pos_of_token[t] + 1;
    const std::int32_t* table = batch.block_tables + batch.seq_block_offset[seq];
    const float* qh = q + static_cast<std::size_t>(t) * dim + h * head_size;
    const int kv_off = (h / group) * head_size;
    float max_score = -INFINITY;
    for (int p = 0; p < n_ctx; ++p) {
      const float* k = kv.k_base + table[p / kv.block_size] * kv.block_stride +
                       static_cast<std::size_t>(p % kv.block_size) * kv.kv_dim + kv_off;
      scores[p] = kt.dot(qh, k, head_size) * scale;
      max_score = std::max(max_score, scores[p]);
    }
    float sum = 0.0f;
    for (int p = 0; p < n_ctx; ++p) {
      scores[p] = std::exp(scores[p] - max_score);
      sum += scores[p];
    }
    const float inv_sum = 1.0f / sum;
    float* oh = out + static_cast<std::size_t>(t) * dim + h * head_size;
    std::fill(oh, oh + head_size, 0.0f);
    for (int p = 0; p < n_ctx; ++p) {
      const float* v = kv.v_base + table[p / kv.block_size] * kv.block_stride +
                       static_cast<std::size_t>(p % kv.block_size) * kv.kv_dim + kv_off;
      kt.axpy(oh, scores[p] * inv_sum, v, head_size);
    }
  });
}

}  // namespace pagedserve::kernels::ops
