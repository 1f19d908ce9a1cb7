// TBB-parallel entry points: split each op over rows, tiles or (token, head) pairs and run the
// selected table's serial inner loops on each piece. The split never changes how an output element
// is reduced, so results are identical for any grain or thread count.
#include <tbb/enumerable_thread_specific.h>
#include <tbb/blocked_range.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "block_activations.hpp"
#include "kv_prefetch_stream.hpp"
#include "pagedserve/check.hpp"
#include "model/ggml_blocks.hpp"
#include "pagedserve/kernels.hpp"

namespace pagedserve::kernels::ops {

namespace {

// Tiles of 16 output rows (one i8 panel): each tile's weights are read once for all tokens of the step.
constexpr int rows_per_tile = 16;

// Row-wise ops (norms, RoPE, SwiGLU, adds) over fewer elements than this run on the calling thread:
// at decode sizes they take a few microseconds, less than waking the arena and joining it.
constexpr std::size_t serial_elements = std::size_t{1} << 15;

// f(r) for r < n_rows, rows of row_elements floats: serially when small, else one task per row.
template <class F>
void for_each_row(int n_rows, std::size_t row_elements, const F& f) {
  if (static_cast<std::size_t>(n_rows) * row_elements <= serial_elements) {
    for (int r = 0; r < n_rows; ++r) f(r);
    return;
  }
  tbb::parallel_for(0, n_rows, f);
}

}  // namespace

void matmul(const kernel_table& kt, float* out, const float* x, const float* w, int n_tokens, int n_in,
            int n_out) {
  const int n_tiles = (n_out + rows_per_tile - 1) / rows_per_tile;
  tbb::parallel_for(tbb::blocked_range<int>(0, n_tiles), [&](const tbb::blocked_range<int>& r) {
    const int o_begin = r.begin() * rows_per_tile;
    const int o_end = std::min(n_out, r.end() * rows_per_tile);
    kt.matmul_rows(out, x, w, n_tokens, n_in, n_out, o_begin, o_end);
  });
}

namespace {

// The quantized activations of one int8 matmul: xq [n_tokens, k_pad] and x_scales [n_tokens]; and those
// of the block-quantized matmuls, one buffer per activation format the group's weights pair with:
// blocks[f] [n_tokens, activation_row_bytes].
struct i8_activations {
  std::vector<std::uint8_t> xq;
  std::vector<float> x_scales;
  std::vector<std::byte> blocks[3];
};

// Per-thread activation buffers that grow to the largest step and are then reused, so the hot path
// allocates nothing. A stack, not one buffer: a thread waiting in one matmul's parallel_for may steal
// a task that runs another (MoE experts run in parallel), which then takes the next level.
class i8_scratch {
 public:
  i8_scratch() : stack_(stacks_.local()) {
    if (stack_.depth == stack_.levels.size()) stack_.levels.push_back(std::make_unique<i8_activations>());
    buffers_ = stack_.levels[stack_.depth++].get();
  }
  ~i8_scratch() { --stack_.depth; }
  i8_scratch(const i8_scratch&) = delete;
  i8_scratch& operator=(const i8_scratch&) = delete;
  i8_activations& operator*() { return *buffers_; }

 private:
  struct stack {
    std::vector<std::unique_ptr<i8_activations>> levels;
    std::size_t depth = 0;
  };
  static inline tbb::enumerable_thread_specific<stack> stacks_;
  stack& stack_;
  i8_activations* buffers_ = nullptr;
};

// Steps of up to this many tokens split a matmul's rows statically (see matmul_group).
constexpr int static_split_tokens = 16;

// The widest register block of panels of the int8 micro-kernels (AVX512-VNNI's P::max_panels, a
// multiple of the others'): a range of panels that is not a multiple of it ends in a slower, narrower tile.
constexpr int i8_tile_panels = 4;

// At decode sizes the other threads start on their share of a matmul ~1.1-1.4 us after the fork and
// the calling thread ~0.45 us after it (docs/batch1-decode.md, "Matmul phases at batch 1"): the caller
// takes this many more weight bytes than the others, what a thread streams in the difference, so that
// all shares end together. A tile's time grows with its tokens (at most linearly), the lead shrinks with them.
constexpr std::size_t caller_lead_bytes = 16 << 10;

// The calling thread's extra tiles when n_tiles tiles of n_bytes weights are split n_shares ways: never
// more than half an even share, none on one thread.
int caller_lead_tiles(int n_tiles, std::size_t n_bytes, int n_tokens, int n_shares) {
  if (n_shares < 2 || n_bytes == 0) return 0;
  const std::size_t tile_bytes = std::max<std::size_t>(1, n_bytes / n_tiles);
  const int lead = static_cast<int>(caller_lead_bytes / n_tokens / tile_bytes);
  return std::min(lead, n_tiles / n_shares / 2);
}

// A group's tiles are numbered one output after the other.
int tiles_of(const weight& w) { return (w.rows + rows_per_tile - 1) / rows_per_tile; }

// Rows [16 t_begin, 16 t_end) of one output; xq/x_scales hold x quantized when w is i8.
void matmul_tiles(const kernel_table& kt, const matmul_output& o, const float* x, const i8_activations& a,
                  int n_tokens, int t_begin, int t_end) {
  const weight& w = o.w;
  if (is_block_quantized(w.type)) {
    kt.matmul_blocks(o.out, a.blocks[static_cast<int>(act_format_of(w.type))].data(), w, n_tokens,
                     t_begin * rows_per_tile, std::min(w.rows, t_end * rows_per_tile));
    return;
  }
  if (w.type == dtype::i8) {
    kt.matmul_i8(o.out, a.xq.data(), a.x_scales.data(), w, n_tokens, t_begin, t_end);
    return;
  }
  const int o_begin = t_begin * rows_per_tile, o_end = std::min(w.rows, t_end * rows_per_tile);
  switch (w.type) {
    case dtype::f32: kt.matmul_rows(o.out, x, w.f32(), n_tokens, w.cols, w.rows, o_begin, o_end); break;
    case dtype::bf16: kt.matmul_rows_bf16(o.out, x, w.u16(), n_tokens, w.cols, w.rows, o_begin, o_end); break;
    case dtype::f16: kt.matmul_rows_f16(o.out, x, w.u16(), n_tokens, w.cols, w.rows, o_begin, o_end); break;
    default: break;  // i8 and the block formats, above
  }
}

}  // namespace

void matmul_group(const kernel_table& kt, std::span<const matmul_output> outputs, const float* x, int n_tokens) {
  const int n_in = outputs.front().w.cols;
  bool any_i8 = false;
  std::optional<dtype> format_weight[3];  // per act_format: a weight type of the group using it, if any
  int n_tiles = 0;
  for (const matmul_output& o : outputs) {
    ps_check(o.w.cols == n_in, "matmul_group: outputs of different input widths");
    any_i8 = any_i8 || o.w.type == dtype::i8;
    if (is_block_quantized(o.w.type)) {
      format_weight[static_cast<int>(act_format_of(o.w.type))] = o.w.type;
    }
    n_tiles += tiles_of(o.w);
  }
  // W8A8: each token quantized once (one pass over x) for every i8 output.
  i8_scratch scratch;
  i8_activations& a = *scratch;
  if (any_i8) {
    const int k_pad = i8_padded_cols(n_in);
    const std::size_t xq_size = static_cast<std::size_t>(n_tokens) * k_pad;
    if (a.xq.size() < xq_size) a.xq.resize(xq_size);
    if (a.x_scales.size() < static_cast<std::size_t>(n_tokens)) a.x_scales.resize(n_tokens);
    for_each_row(n_tokens, n_in, [&](int t) {
      a.x_scales[t] = kt.quantize_token_u8(a.xq.data() + static_cast<std::size_t>(t) * k_pad,
                                           x + static_cast<std::size_t>(t) * n_in, n_in, k_pad);
    });
  }
  // Block-quantized weights: each token quantized once per activation format the group needs.
  for (int f = 0; f < 3; ++f) {
    if (!format_weight[f]) continue;
    const std::size_t row_bytes = activation_row_bytes(*format_weight[f], n_in);
    if (a.blocks[f].size() < n_tokens * row_bytes) a.blocks[f].resize(n_tokens * row_bytes);
    for_each_row(n_tokens, n_in, [&](int t) {
      kt.quantize_activations(a.blocks[f].data() + t * row_bytes, x + static_cast<std::size_t>(t) * n_in,
                              *format_weight[f], n_in);
    });
  }
  // Each range of tiles runs the pieces of the outputs it covers. i8 ranges hold at least 4 panels
  // (64 rows) so a prefill's micro-kernels get whole register blocks, and their ends snap down to a
  // multiple of i8_tile_panels inside the output they fall in: the same map for both ranges sharing an
  // end, so the snapped ranges still cover every tile once, and no split leaves a narrow tail tile.
  const auto snap = [&](int tile) {
    if (!any_i8) return tile;
    int first = 0;
    for (const matmul_output& o : outputs) {
      const int n = tiles_of(o.w);
      if (tile < first + n) return first + (tile - first) / i8_tile_panels * i8_tile_panels;
      first += n;
    }
    return tile;  // the end of the last output
  };
  const auto body = [&](const tbb::blocked_range<int>& r) {
    const int r_begin = snap(r.begin()), r_end = snap(r.end());
    int first = 0;
    for (const matmul_output& o : outputs) {
      const int n = tiles_of(o.w);
      const int b = std::max(r_begin, first), e = std::min(r_end, first + n);
      if (b < e) matmul_tiles(kt, o, x, a, n_tokens, b - first, e - first);
      first += n;
    }
  };
  // Decode-sized steps give each thread one contiguous share of the rows (no splitting or stealing:
  // one weight stream per thread, and the join is all they pay); prefill's long matmuls keep
  // TBB's dynamic split, which rebalances when a core is busy elsewhere.
  if (n_tokens > static_split_tokens) {
    tbb::parallel_for(tbb::blocked_range<int>(0, n_tiles, any_i8 ? 8 : 1), body);
    return;
  }
  std::size_t n_bytes = 0;
  for (const matmul_output& o : outputs) n_bytes += o.w.n_bytes();
  // i8 shares of at least 8 tiles, as the dynamic split's grain.
  const int n_shares = std::max(1, std::min(tbb::this_task_arena::max_concurrency(), n_tiles / (any_i8 ? 8 : 1)));
  const int lead = caller_lead_tiles(n_tiles, n_bytes, n_tokens, n_shares);
  // Share s: tiles [bound(s), bound(s + 1)). The static partitioner gives one share to each thread and
  // keeps the first, the one with the lead, on the calling thread.
  const auto bound = [&](int s) {
    if (s == 0) return 0;
    return lead + static_cast<int>(static_cast<long long>(n_tiles - lead) * s / n_shares);
  };
  tbb::parallel_for(
      tbb::blocked_range<int>(0, n_shares, 1),
      [&](const tbb::blocked_range<int>& r) {
        for (int s = r.begin(); s < r.end(); ++s) {
          const int b = bound(s), e = bound(s + 1);
          if (b < e) body(tbb::blocked_range<int>(b, e));
        }
      },
      tbb::static_partitioner{});
}

void matmul(const kernel_table& kt, float* out, const float* x, const weight& w, int n_tokens) {
  const matmul_output one{out, w};
  matmul_group(kt, {&one, 1}, x, n_tokens);
}

void add_bias(float* x, const float* bias, int n_tokens, int n) {
  for_each_row(n_tokens, n, [&](int t) {
    float* xt = x + static_cast<std::size_t>(t) * n;
    for (int i = 0; i < n; ++i) xt[i] += bias[i];
  });
}

namespace {

// x[dim] += y[dim] of one row.
void add_row(float* x, const float* y, int dim) {
  for (int i = 0; i < dim; ++i) x[i] += y[i];
}

// out[dim] = rmsnorm(x[dim]) of one row.
void rmsnorm_row(const kernel_table& kt, float* out, const float* x, const float* weight, int dim, float eps) {
  const float scale = 1.0f / std::sqrt(kt.sum_squares(x, dim) / dim + eps);
  kt.scale_mul(out, x, weight, scale, dim);
}

}  // namespace

void add(float* x, const float* y, int n_tokens, int dim) {
  for_each_row(n_tokens, dim, [&](int t) {
    const std::size_t at = static_cast<std::size_t>(t) * dim;
    add_row(x + at, y + at, dim);
  });
}

void rmsnorm(const kernel_table& kt, float* out, const float* x, const float* weight, int n_rows, int dim,
             float eps) {
  for_each_row(n_rows, dim, [&](int r) {
    const std::size_t at = static_cast<std::size_t>(r) * dim;
    rmsnorm_row(kt, out + at, x + at, weight, dim, eps);
  });
}

void add_rmsnorm(const kernel_table& kt, float* out, float* x, const float* y, const float* weight, int n_tokens,
                 int dim, float eps) {
  for_each_row(n_tokens, dim, [&](int t) {
    const std::size_t at = static_cast<std::size_t>(t) * dim;
    add_row(x + at, y + at, dim);
    rmsnorm_row(kt, out + at, x + at, weight, dim, eps);  // while the row is still in L1
  });
}

void layernorm(const kernel_table& kt, float* out, const float* x, const float* weight, const float* bias, int n_rows,
               int dim, float eps) {
  for_each_row(n_rows, dim, [&](int r) {
    const std::size_t at = static_cast<std::size_t>(r) * dim;
    kt.layernorm(out + at, x + at, weight, bias, dim, eps);
  });
}

void add_layernorm(const kernel_table& kt, float* out, float* x, const float* y, const float* weight, const float* bias,
                   int n_tokens, int dim, float eps) {
  for_each_row(n_tokens, dim, [&](int t) {
    const std::size_t at = static_cast<std::size_t>(t) * dim;
    add_row(x + at, y + at, dim);
    kt.layernorm(out + at, x + at, weight, bias, dim, eps);
  });
}

void gelu_tanh(const kernel_table& kt, float* x, int n_tokens, int dim) {
  for_each_row(n_tokens, dim, [&](int t) { kt.gelu_tanh(x + static_cast<std::size_t>(t) * dim, dim); });
}

void rope_angles(float* cos, float* sin, const std::int32_t* positions, int n_tokens, const float* inv_freq,
                 int n_freq, float scale) {
  // The reference's arithmetic: angle = pos * inv_freq[i] in fp32, then cos and sin of it.
  for_each_row(n_tokens, n_freq, [&](int t) {
    for (int i = 0; i < n_freq; ++i) {
      const float angle = positions[t] * inv_freq[i];
      cos[static_cast<std::size_t>(t) * n_freq + i] = std::cos(angle) * scale;
      sin[static_cast<std::size_t>(t) * n_freq + i] = std::sin(angle) * scale;
    }
  });
}

void rope(float* x, const float* cos, const float* sin, int n_tokens, int n_heads, int head_size, rope_style style) {
  const int half = head_size / 2;
  ps_check(head_size <= 1024, "rope: head size above 1024");
  for_each_row(n_tokens, static_cast<std::size_t>(n_heads) * head_size, [&](int t) {
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
  for_each_row(n_tokens, dim, [&](int t) {
    kt.swiglu(gate + static_cast<std::size_t>(t) * dim, up + static_cast<std::size_t>(t) * dim, dim);
  });
}

namespace {

// Consecutive tokens of one sequence (a prefill chunk, or one decode token) attended together.
struct query_tile {
  int first_token = 0;
  int n_tokens = 0;
};

// Refills tiles with the batch's tiles of up to max_tile tokens.
void query_tiles(std::vector<query_tile>& tiles, const attention_batch& batch, int max_tile) {
  tiles.clear();
  for (int t = 0; t < batch.n_tokens; ++t) {
    if (!tiles.empty()) {
      query_tile& last = tiles.back();
      const int prev = last.first_token + last.n_tokens - 1;
      if (last.n_tokens < max_tile && batch.seq_of_token[prev] == batch.seq_of_token[t]) {
        ++last.n_tokens;
        continue;
      }
    }
    tiles.push_back({t, 1});
  }
}

}  // namespace

namespace {

// The kv head's runs in the blocks [b0, b0 + n_blocks) of a sequence's table (n_blocks <= kv_group_blocks).
kv_group kv_group_at(const paged_kv_layer& kv, const std::int32_t* table, int b0, int n_blocks, std::size_t head_off) {
  kv_group g;
  g.block_size = kv.block_size;
  g.type = kv.type;
  const std::size_t elem = dtype_size(kv.type);
  for (int i = 0; i < n_blocks; ++i) {
    const std::size_t off = table[b0 + i] * kv.block_stride + head_off;  // elements
    g.k[i] = static_cast<const std::byte*>(kv.k_base) + off * elem;
    g.v[i] = static_cast<const std::byte*>(kv.v_base) + off * elem;
    if (kv.type == dtype::i8) g.k_scales[i] = kv.k_scales + off / kv.head_size, g.v_scales[i] = kv.v_scales + off / kv.head_size;
  }
  return g;
}

// Lists the K/V runs one work item reads in stream, in the order the kernels read them: per group,
// each block's K (and q8 scales) then each block's V, of the rows up to last_pos, for the n_heads kv
// heads from head_off on (adjacent in a block: one run per block when the block is full).
void kv_item_runs(kv_prefetch_stream& stream, const paged_kv_layer& kv, const std::int32_t* table,
                  int first_block, int last_block, int last_pos, std::size_t head_off, int n_heads) {
  const std::size_t elem = dtype_size(kv.type);
  const bool scaled = kv.type == dtype::i8;
  const std::size_t head_stride = static_cast<std::size_t>(kv.block_size) * kv.head_size;  // elements
  for (int b0 = first_block; b0 <= last_block; b0 += kv_group_blocks) {
    const int end = std::min(b0 + kv_group_blocks, last_block + 1);
    for (const auto& [base, scales] : {std::pair{kv.k_base, kv.k_scales}, std::pair{kv.v_base, kv.v_scales}})
      for (int b = b0; b < end; ++b) {
        const int rows = std::min(kv.block_size, last_pos + 1 - b * kv.block_size);
        // A full block's heads are one run; a partial one's are n_heads runs of its first rows.
        const int runs = rows == kv.block_size ? 1 : n_heads, run_rows = rows == kv.block_size ? n_heads * rows : rows;
        for (int h = 0; h < runs; ++h) {
          const std::size_t off = table[b] * kv.block_stride + head_off + h * head_stride;  // elements
          stream.list({static_cast<const std::byte*>(base) + off * elem,
                       static_cast<std::uint32_t>(run_rows * kv.head_size * elem)});
          if (scaled) stream.list({reinterpret_cast<const std::byte*>(scales + off / kv.head_size),
                                   static_cast<std::uint32_t>(run_rows * sizeof(float))});
        }
      }
  }
}

}  // namespace

namespace {

// One paged_attention call's work items, (tile of up to 8 tokens of one sequence, kv heads), and what
// attending them reads and writes. With GQA, and for a tile of several tokens (prefill), an item has one
// kv head (its rows share the group's loads). An MHA tile of one token has its kv heads cut into as many
// items as its share of the step's work (keys times tokens) is
// of items_per_thread items per thread: at batch 1 on two threads four items of three heads; from a few
// equal sequences on one item a sequence; beside short sequences a long one is still cut, so no thread
// is left its whole length (one of 2000 keys beside seven of 20). An item's heads are walked 16 keys at
// a time across them (kernel_table::attend_heads): a thread reads each block's heads as one run (3-48 KB on s110m) rather
// than a 1-4 KB run per (block, head), which the memory system streams much faster. A range of items is
// attended on one thread through one kv_prefetch_stream: its K/V runs, in reading order across groups
// and items, prefetched a fixed distance ahead of the kernels.
class attention_items {
 public:
  attention_items(const kernel_table& kt, float* out, const float* q, const paged_kv_layer& kv,
                  const attention_batch& batch, int n_heads, int n_kv_heads, int head_size)
      : kt_(kt), out_(out), q_(q), kv_(kv), batch_(batch), n_kv_heads_(n_kv_heads), head_size_(head_size),
        dim_(n_heads * head_size), group_(n_heads / n_kv_heads),
        scale_(1.0f / std::sqrt(static_cast<float>(head_size))) {
    query_tiles(tiles_, batch, max_tile);  // two small allocations per layer (tiles, items), against a layer's 50+ us
    list_items();
  }
  int size() const { return static_cast<int>(items_.size()); }

  void attend(const tbb::blocked_range<int>& items) const {
    static tbb::enumerable_thread_specific<thread_state> states;
    thread_state& st = states.local();
    st.stream.restart();
    st.scores.resize(static_cast<std::size_t>(max_tile) * group_ * max_heads_per_item_ * attend_scores_floats(kv_.block_size));
    int next_listed = items.begin();
    for (int item = items.begin(); item < items.end(); ++item) {
      // This item and the next are listed, and more while the listed bytes ahead are short of the distance.
      st.stream.drop_asked();
      for (; next_listed < items.end() && (next_listed <= item + 1 || st.stream.wants_more()); ++next_listed) {
        const item_span span = span_of(next_listed);
        kv_item_runs(st.stream, kv_, span.table, span.first_block, span.last_block, span.last_pos,
                     kv_.head_offset(span.first_head, 0), span.n_heads);
      }
      st.stream.advance(0);
      attend_item(item, st);
    }
  }

 private:
  static constexpr int max_tile = 8;
  // Work items of equal work per thread that MHA tiles are cut into. Two: at batch 1 as fast as one
  // (runs of 3 heads against 6), and a thread still has two items to balance with the other's.
  static constexpr int items_per_thread = 2;
  struct thread_state {
    std::vector<float> acc, max, sum, scores;
    std::vector<attend_row> rows;  // the item's rows that attend the current group
    std::vector<kv_group> groups;  // rows[r]'s group, for items of several kv heads
    kv_prefetch_stream stream;
  };
  struct work_item {  // tiles_[tile]'s kv heads [first_head, first_head + n_heads)
    int tile, first_head, n_heads;
  };
  struct item_span {  // one work item's blocks and kv heads
    const std::int32_t* table;
    int first_block, last_block, last_pos;
    int first_head, n_heads;
  };

  // The keys a tile attends: from its first token's attention start to its last token's position.
  struct key_range {
    int first_start, last_pos;
  };
  key_range keys_of(const query_tile& tile) const {
    return {attention_start(batch_, batch_.pos_of_token[tile.first_token]),
            batch_.pos_of_token[tile.first_token + tile.n_tokens - 1]};
  }

  // A tile's work: its tokens times its keys (all heads).
  std::int64_t tile_work(const query_tile& tile) const {
    const key_range keys = keys_of(tile);
    return std::int64_t{tile.n_tokens} * (keys.last_pos + 1 - keys.first_start);
  }

  // Fills items_: per tile, its kv heads in parts of equal size, as many as its work is of the step's
  // work over items_per_thread items per thread (rounded up, in integers); GQA: one kv head a part.
  void list_items() {
    std::int64_t total = 0;
    for (const query_tile& tile : tiles_) total += tile_work(tile);
    const std::int64_t n_target = items_per_thread * tbb::this_task_arena::max_concurrency();
    for (int t = 0; t < static_cast<int>(tiles_.size()); ++t) {
      // Items that already read their group once for several rows take one kv head each: GQA's (a kv
      // head's query heads) and a prefill tile's (its tokens), on the rows kernel, which shares each K/V
      // load among them; MHA decode tiles (one token) are cut by work instead.
      const std::int64_t share = (tile_work(tiles_[t]) * n_target + total - 1) / total;
      const bool rows_share_loads = group_ > 1 || tiles_[t].n_tokens > 1;
      const int parts = rows_share_loads ? n_kv_heads_ : static_cast<int>(std::clamp<std::int64_t>(share, 1, n_kv_heads_));
      const int heads = (n_kv_heads_ + parts - 1) / parts;
      max_heads_per_item_ = std::max(max_heads_per_item_, heads);
      for (int h = 0; h < n_kv_heads_; h += heads) items_.push_back({t, h, std::min(heads, n_kv_heads_ - h)});
    }
  }

  item_span span_of(int item) const {
    const work_item& it = items_[item];
    const query_tile tile = tiles_[it.tile];
    const int bs = kv_.block_size;
    const key_range keys = keys_of(tile);
    return item_span{batch_.block_tables + batch_.seq_block_offset[batch_.seq_of_token[tile.first_token]],
                     keys.first_start / bs / kv_group_blocks * kv_group_blocks, keys.last_pos / bs, keys.last_pos,
                     it.first_head, it.n_heads};
  }

  // Row r of an item: token first + r / (group * n_heads), query head first_head * group + r % (group * n_heads).
  int row_token(const query_tile& tile, const item_span& span, int r) const {
    return tile.first_token + r / (group_ * span.n_heads);
  }
  int row_head(const item_span& span, int r) const { return span.first_head * group_ + r % (group_ * span.n_heads); }

  void attend_item(int item, thread_state& st) const {
    const query_tile tile = tiles_[items_[item].tile];
    const item_span span = span_of(item);
    const int bs = kv_.block_size, n_rows = tile.n_tokens * group_ * span.n_heads;
    st.acc.assign(static_cast<std::size_t>(n_rows) * head_size_, 0.0f);
    st.max.assign(n_rows, -INFINITY);
    st.sum.assign(n_rows, 0.0f);
    for (int b0 = span.first_block; b0 <= span.last_block; b0 += kv_group_blocks) {
      const int n_blocks = std::min(kv_group_blocks, span.last_block + 1 - b0);
      const int p0 = b0 * bs;
      st.rows.clear(), st.groups.clear();
      for (int r = 0; r < n_rows; ++r) {
        const int t = row_token(tile, span, r), h = row_head(span, r);
        // Causal, up to its own position; from the window's start when there is one.
        const int n = std::min(n_blocks * bs, batch_.pos_of_token[t] + 1 - p0);
        const int j0 = std::max(0, attention_start(batch_, batch_.pos_of_token[t]) - p0);
        if (n <= j0) continue;
        const float* qh = q_ + static_cast<std::size_t>(t) * dim_ + static_cast<std::size_t>(h) * head_size_;
        st.rows.push_back({st.acc.data() + static_cast<std::size_t>(r) * head_size_, &st.max[r], &st.sum[r], qh, j0, n});
        if (span.n_heads > 1 || st.groups.empty()) {
          st.groups.push_back(kv_group_at(kv_, span.table, b0, n_blocks, kv_.head_offset(h / group_, 0)));
          st.groups.back().ahead = &st.stream;
        }
      }
      if (st.rows.empty()) continue;
      const int n_attending = static_cast<int>(st.rows.size());
      if (span.n_heads == 1)
        kt_.attend_group_rows(st.rows.data(), n_attending, st.groups[0], head_size_, scale_, st.scores.data());
      else
        kt_.attend_heads(st.rows.data(), st.groups.data(), n_attending, head_size_, scale_, st.scores.data());
    }
    for (int r = 0; r < n_rows; ++r) {
      const int t = row_token(tile, span, r), h = row_head(span, r);
      const float inv_sum = 1.0f / st.sum[r];
      const float* acc = st.acc.data() + static_cast<std::size_t>(r) * head_size_;
      float* oh = out_ + static_cast<std::size_t>(t) * dim_ + static_cast<std::size_t>(h) * head_size_;
      for (int i = 0; i < head_size_; ++i) oh[i] = acc[i] * inv_sum;
    }
  }

  const kernel_table& kt_;
  float* out_;
  const float* q_;
  const paged_kv_layer& kv_;
  const attention_batch& batch_;
  int n_kv_heads_, head_size_, dim_, group_;
  float scale_;
  std::vector<query_tile> tiles_;
  std::vector<work_item> items_;
  int max_heads_per_item_ = 1;
};

}  // namespace

void paged_attention(const kernel_table& kt, float* out, const float* q, const paged_kv_layer& kv,
                     const attention_batch& batch, int n_heads, int n_kv_heads, int head_size) {
  // The sequence's blocks are taken kv_group_blocks at a time, at multiples of kv_group_blocks: each
  // group's K/V is read from memory once for all the tile's tokens and all query heads sharing the kv
  // head (GQA), and softmax is online per group: rescale what was accumulated by exp(old max - new max),
  // then add the group's weighted values. Every query row goes through the same groups in the same
  // order whatever tile or thread it is in, so the result does not depend on the step's composition
  // (batch invariance); the prefetch stream changes what is in cache, never what is computed.
  ps_check(kv.head_size == head_size, "paged_attention: the KV layer's head size differs from the model's");
  const attention_items items(kt, out, q, kv, batch, n_heads, n_kv_heads, head_size);
  tbb::parallel_for(tbb::blocked_range<int>(0, items.size()),
                    [&](const tbb::blocked_range<int>& range) { items.attend(range); });
}

}  // namespace pagedserve::kernels::ops
