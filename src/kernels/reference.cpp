// Plain scalar kernels, written for reading: the truth every faster variant is tested against.
#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "model/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels::reference {

void matmul(float* out, const float* x, const float* w, int n_tokens, int n_in, int n_out) {
  for (int t = 0; t < n_tokens; ++t) {
    for (int o = 0; o < n_out; ++o) {
      float sum = 0.0f;
      for (int i = 0; i < n_in; ++i) sum += w[static_cast<std::size_t>(o) * n_in + i] * x[static_cast<std::size_t>(t) * n_in + i];
      out[static_cast<std::size_t>(t) * n_out + o] = sum;
    }
  }
}

float quantize_token_u8(std::uint8_t* xq, const float* x, int n, int n_pad) {
  float max_abs = 0.0f;
  for (int i = 0; i < n; ++i) max_abs = std::max(max_abs, std::abs(x[i]));
  const float inv = 127.0f / max_abs;
  if (!std::isfinite(max_abs) || !std::isfinite(inv)) {  // inf/NaN in x, or x (near) zero
    std::fill(xq, xq + n_pad, std::uint8_t{128});
    return std::isfinite(max_abs) ? 0.0f : std::numeric_limits<float>::quiet_NaN();
  }
  for (int i = 0; i < n; ++i) {
    // |x * inv| <= 127 up to a rounding step: the clamp only catches that step.
    const float r = std::clamp(std::nearbyint(x[i] * inv), -127.0f, 127.0f);
    xq[i] = static_cast<std::uint8_t>(static_cast<int>(r) + 128);
  }
  std::fill(xq + n, xq + n_pad, std::uint8_t{128});
  return max_abs / 127.0f;
}

namespace {
float matmul_dot(const float* a, const float* b, int n) {
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}
}  // namespace

void matmul(float* out, const float* x, const weight& w, int n_tokens) {
  const int n_in = w.cols, n_out = w.rows;
  if (w.type == dtype::i8) {
    std::vector<std::uint8_t> xq(n_in);
    for (int t = 0; t < n_tokens; ++t) {
      const float x_scale = quantize_token_u8(xq.data(), x + static_cast<std::size_t>(t) * n_in, n_in, n_in);
      for (int o = 0; o < n_out; ++o) {
        std::int32_t sum = 0;
        for (int i = 0; i < n_in; ++i) sum += (xq[i] - 128) * w.i8()[i8_index(n_in, o, i)];
        out[static_cast<std::size_t>(t) * n_out + o] = static_cast<float>(sum) * (w.scales[o] * x_scale);
      }
    }
    return;
  }
  if (is_block_quantized(w.type)) {
    // The exact reference: each row decoded as ggml does, then an fp32 dot with the unquantized x.
    std::vector<float> row(n_in);
    for (int o = 0; o < n_out; ++o) {
      dequantize_blocks(w.type, row.data(),
                        static_cast<const std::byte*>(w.data) + static_cast<std::size_t>(o) * block_row_bytes(w.type, n_in),
                        n_in);
      for (int t = 0; t < n_tokens; ++t)
        out[static_cast<std::size_t>(t) * n_out + o] = matmul_dot(row.data(), x + static_cast<std::size_t>(t) * n_in, n_in);
    }
    return;
  }
  for (int t = 0; t < n_tokens; ++t) {
    for (int o = 0; o < n_out; ++o) {
      float sum = 0.0f;
      for (int i = 0; i < n_in; ++i)
        sum += weight_at(w, static_cast<std::size_t>(o) * n_in + i) * x[static_cast<std::size_t>(t) * n_in + i];
      out[static_cast<std::size_t>(t) * n_out + o] = sum;
    }
  }
}

void rmsnorm(float* out, const float* x, const float* weight, int n_rows, int dim, float eps) {
  for (int r = 0; r < n_rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * dim;
    float* outr = out + static_cast<std::size_t>(r) * dim;
    float ss = 0.0f;
    for (int i = 0; i < dim; ++i) ss += xr[i] * xr[i];
    ss = 1.0f / std::sqrt(ss / dim + eps);
    for (int i = 0; i < dim; ++i) outr[i] = weight[i] * (ss * xr[i]);
  }
}

void rope(float* x, const std::int32_t* positions, int n_tokens, int n_heads, int head_size, float theta) {
  const int dim = n_heads * head_size;
  for (int t = 0; t < n_tokens; ++t) {
    float* xt = x + static_cast<std::size_t>(t) * dim;
    for (int i = 0; i < dim; i += 2) {
      const int head_dim = i % head_size;
      const float freq = 1.0f / std::pow(theta, head_dim / static_cast<float>(head_size));
      const float angle = positions[t] * freq;
      const float c = std::cos(angle), s = std::sin(angle);
      const float v0 = xt[i], v1 = xt[i + 1];
      xt[i] = v0 * c - v1 * s;
      xt[i + 1] = v0 * s + v1 * c;
    }
  }
}

void rope(float* x, const std::int32_t* positions, int n_tokens, int n_heads, int head_size, const float* inv_freq,
          rope_style style) {
  const int half = head_size / 2;
  std::vector<float> in(head_size);
  for (int t = 0; t < n_tokens; ++t)
    for (int h = 0; h < n_heads; ++h) {
      float* xh = x + (static_cast<std::size_t>(t) * n_heads + h) * head_size;
      in.assign(xh, xh + head_size);
      for (int i = 0; i < half; ++i) {
        const float angle = positions[t] * inv_freq[i];
        const float c = std::cos(angle), s = std::sin(angle);
        // Interleaved pairs (2i, 2i+1) as run.c, or rotate-half pairs (i, i+half) as HF's rotate_half;
        // written back as (i, i+half) either way.
        const float v0 = style == rope_style::interleaved ? in[2 * i] : in[i];
        const float v1 = style == rope_style::interleaved ? in[2 * i + 1] : in[i + half];
        xh[i] = v0 * c - v1 * s;
        xh[i + half] = v0 * s + v1 * c;
      }
    }
}

void softmax(float* x, int n) {
  float max_val = x[0];
  for (int i = 1; i < n; ++i) max_val = x[i] > max_val ? x[i] : max_val;
  float sum = 0.0f;
  for (int i = 0; i < n; ++i) {
    x[i] = std::exp(x[i] - max_val);
    sum += x[i];
  }
  for (int i = 0; i < n; ++i) x[i] /= sum;
}

void swiglu(float* gate, const float* up, int n) {
  for (int i = 0; i < n; ++i) {
    const float g = gate[i];
    gate[i] = g * (1.0f / (1.0f + std::exp(-g))) * up[i];
  }
}

void layernorm(float* out, const float* x, const float* weight, const float* bias, int n_rows, int dim, float eps) {
  for (int r = 0; r < n_rows; ++r) {
    const float* xr = x + static_cast<std::size_t>(r) * dim;
    float* outr = out + static_cast<std::size_t>(r) * dim;
    float sum = 0.0f;
    for (int i = 0; i < dim; ++i) sum += xr[i];
    const float mean = sum / dim;
    float ss = 0.0f;
    for (int i = 0; i < dim; ++i) ss += (xr[i] - mean) * (xr[i] - mean);
    const float rstd = 1.0f / std::sqrt(ss / dim + eps);
    for (int i = 0; i < dim; ++i) outr[i] = (xr[i] - mean) * rstd * weight[i] + bias[i];
  }
}

void gelu_tanh(float* x, int n) {
  const float sqrt_2_over_pi = 0.7978845608028654f;
  for (int i = 0; i < n; ++i) {
    const float v = x[i];
    x[i] = 0.5f * v * (1.0f + std::tanh(sqrt_2_over_pi * (v + 0.044715f * v * v * v)));
  }
}

void paged_attention(float* out, const float* q, const paged_kv_layer& kv, const attention_batch& batch,
                     int n_heads, int n_kv_heads, int head_size) {
  const int dim = n_heads * head_size;
  const int group = n_heads / n_kv_heads;
  const float scale = 1.0f / std::sqrt(static_cast<float>(head_size));
  float* scores = new float[static_cast<std::size_t>(batch.max_context)];
  for (int t = 0; t < batch.n_tokens; ++t) {
    const int seq = batch.seq_of_token[t];
    const int n_ctx = batch.pos_of_token[t] + 1;
    const int start = attention_start(batch, batch.pos_of_token[t]);
    const std::int32_t* table = batch.block_tables + batch.seq_block_offset[seq];
    for (int h = 0; h < n_heads; ++h) {
      const float* qh = q + static_cast<std::size_t>(t) * dim + h * head_size;
      const int kv_head = h / group;
      for (int p = start; p < n_ctx; ++p) {
        const std::size_t block = static_cast<std::size_t>(table[p / kv.block_size]);
        float s = 0.0f;
        for (int i = 0; i < head_size; ++i) s += qh[i] * kv.key(block, kv_head, p % kv.block_size, i);
        scores[p - start] = s * scale;
      }
      softmax(scores, n_ctx - start);
      float* oh = out + static_cast<std::size_t>(t) * dim + h * head_size;
      for (int i = 0; i < head_size; ++i) oh[i] = 0.0f;
      for (int p = start; p < n_ctx; ++p) {
        const std::size_t block = static_cast<std::size_t>(table[p / kv.block_size]);
        for (int i = 0; i < head_size; ++i) oh[i] += scores[p - start] * kv.value(block, kv_head, p % kv.block_size, i);
      }
    }
  }
  delete[] scores;
}

}  // namespace pagedserve::kernels::reference
