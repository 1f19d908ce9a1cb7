#pragma once
// Kernel signatures. Output first, then inputs, then dimensions; shapes in the comments.
//
// Three layers:
//   reference::  plain scalar code, as readable as llama2.c's run.c; the truth tests compare against.
//   kernel_table one serial inner loop per op and per instruction set (scalar, avx2, avx2_vnni,
//                avx512, avx512_vnni, avx512_bf16),
//                chosen once at start-up from CPU detection or forced by config.
//   ops::        the TBB-parallel entry points the forward pass calls; they split the work
//                (rows, tiles, heads) and run the table's inner loops on each piece.
//
// Batch invariance: every variant computes each output element with an accumulation order that
// depends only on the operand rows, never on how many tokens are in the step or where a token
// sits in it, so a request's greedy output is the same alone or batched.
#include <cstddef>
#include <cstdint>
#include <span>
#include <string_view>

#include "pagedserve/fp8.hpp"
#include "pagedserve/weight.hpp"

namespace pagedserve::kernels {

// The _vnni variants are their base table with the int8 and block-quantized matmuls on vpdpbusd and
// vpdpwssd (AVX-VNNI on ymm, AVX512-VNNI on zmm); the base tables use vpmaddubsw and vpmaddwd instead. avx512_bf16 is
// avx512_vnni with bf16 weights multiplied by vdpbf16ps (kernel_table::bf16_rounds_activations).
enum class isa { scalar, avx2, avx2_vnni, avx512, avx512_vnni, avx512_bf16 };

// How RoPE pairs the dimensions of a head: llama2.c (and Meta's original checkpoints) rotate
// interleaved pairs (2i, 2i+1); Hugging Face Llama/Mistral/Qwen rotate halves (i, i + head_size/2)
// ("rotate_half", GPT-NeoX layout). Pair i turns by pos * inv_freq[i] in both.
//
// The rotated heads always come out in rotate-half order: interleaved input is reordered as it is
// rotated (pair i lands at (i, i + head_size/2)). Queries and keys then reach attention in one
// layout whatever the checkpoint, so a llama2.c model and its HF conversion (whose Wq/Wk rows are
// permuted the same way) compute bit-identical attention scores.
enum class rope_style { interleaved, neox };

std::string_view isa_name(isa v);

// The serial inner loops of one instruction set.
// Blocks per softmax step of paged attention (kernel_table::attend_group): 8 blocks of 16 keys.
constexpr int kv_group_blocks = 8;

struct kv_prefetch_stream;  // src/kernels/kv_prefetch_stream.hpp

// One kv head's keys and values over up to kv_group_blocks consecutive blocks of a sequence: the
// start of the head's run in each block (block_size rows of head_size elements, fp32, fp16 or int8
// by type), and for int8 each row's scale.
struct kv_group {
  const void* k[kv_group_blocks] = {};
  const void* v[kv_group_blocks] = {};
  const float* k_scales[kv_group_blocks] = {};  // i8 only: [block_size] per block
  const float* v_scales[kv_group_blocks] = {};
  int block_size = 0;
  dtype type = dtype::f32;
  // When set, attend_group advances it by the bytes it reads (prefetching the thread's next K/V).
  kv_prefetch_stream* ahead = nullptr;
};

// One query row of kernel_table::attend_group_rows: its accumulator acc[head_size], running max and
// sum, its query q[head_size], and the keys j0 <= j < n of the group it attends (j0 < n).
struct attend_row {
  float* acc;
  float* max;
  float* sum;
  const float* q;
  int j0, n;
};

// Floats of attend_group's scores scratch for one row (kv_group_blocks blocks, whole zmm).
constexpr int attend_scores_floats(int block_size) { return (kv_group_blocks * block_size + 15) / 16 * 16; }

struct kernel_table {
  isa which;
  // out[t, o] = sum_i x[t, i] * w[o, i] for t < n_tokens, o in [o_begin, o_end).
  // x: [n_tokens, n_in] row-major; w: [n_out, n_in] row-major (llama2.c layout); out: [n_tokens, n_out].
  void (*matmul_rows)(float* out, const float* x, const float* w, int n_tokens, int n_in, int n_out,
                      int o_begin, int o_end);
  // The same with bf16 / fp16 weights: each weight is converted exactly to fp32 and accumulated in
  // the very order of matmul_rows, so the result is bit-identical to matmul_rows over the
  // up-converted matrix (and as batch invariant). Except bf16 where bf16_rounds_activations.
  void (*matmul_rows_bf16)(float* out, const float* x, const std::uint16_t* w, int n_tokens, int n_in, int n_out,
                           int o_begin, int o_end);
  void (*matmul_rows_f16)(float* out, const float* x, const std::uint16_t* w, int n_tokens, int n_in, int n_out,
                          int o_begin, int o_end);
  // int8 x int8 matmul over packed dtype::i8 weights (W8A8): for every token t < n_tokens and every
  // row o < w.rows of the panels [p_begin, p_end) (rows 16p .. 16p + 15),
  //   out[t, o] = float(sum_i (xq[t, i] - 128) * q[o, i]) * (w.scales[o] * x_scales[t]).
  // xq: [n_tokens, i8_padded_cols(w.cols)] from quantize_token_u8; out: [n_tokens, w.rows]. The sum is
  // exact in int32 and the two multiplies are the same everywhere, so every table gives the same bits
  // for any batch, tile or thread count.
  void (*matmul_i8)(float* out, const std::uint8_t* xq, const float* x_scales, const weight& w, int n_tokens,
                    int p_begin, int p_end);
  // One token's activations for matmul_i8, symmetric with an offset of 128 (vpdpbusd takes u8):
  // xq[i] = round_half_even(x[i] * (127 / max|x|)) + 128 for i < n, 128 up to n_pad; returns the
  // token's scale max|x| / 127 (0 with all xq = 128 when x is 0 or too small to invert; NaN when x has
  // an infinity or NaN). Every table gives the same bits.
  float (*quantize_token_u8)(std::uint8_t* xq, const float* x, int n, int n_pad);
  // Sum of squares of x[n] (RMSNorm's reduction).
  float (*sum_squares)(const float* x, int n);
  // out[n] = x[n] * scale * weight[n]
  void (*scale_mul)(float* out, const float* x, const float* weight, float scale, int n);
  // y[n] += a * x[n]
  void (*axpy)(float* y, float a, const float* x, int n);
  // gate[n] = silu(gate[n]) * up[n]
  void (*swiglu)(float* gate, const float* up, int n);
  // One query row of paged attention against keys j0 <= j < n of an aligned group of K/V blocks
  // (key j is slot j % block_size of block j / block_size of the group), softmax online per group:
  //   s_j = q[head_size] · k_j * scale, m' = max(*row_max, s_j),
  //   acc[head_size] = acc * exp(*row_max - m') + sum_j exp(s_j - m') v_j, *row_sum likewise.
  // One max/exp/sum pass per group rather than per block keeps the chain short; groups start at
  // multiples of kv_group_blocks blocks of the sequence, so a row's arithmetic depends only on its own
  // q and keys, never on the other rows of the step (batch invariance). fp16 and int8 K/V are widened
  // exactly as they are read (int8 times its row's scale: s_j = (q · k_j) * k_scale_j * scale and
  // weight exp(...) * v_scale_j), so fp16 gives the fp32 bits over the widened cache.
  // scores: scratch of kv_group_blocks * block_size floats, rounded up to 16.
  void (*attend_group)(float* acc, float* row_max, float* row_sum, const float* q, const kv_group& g, int j0, int n,
                       int head_size, float scale, float* scores);
  // attend_group for several rows against the same group (the GQA heads sharing its kv head, the
  // tokens of a tile), in one pass over its keys: each K and V row is loaded once for all rows and the
  // rows' chains run interleaved, so the pass is throughput- rather than latency-bound. Every row gets
  // the bits attend_group gives it alone (same per-key dot, same max/exp/sum and axpy order): only
  // the schedule changes. g.ahead advances by about the group bytes the rows read (prefetch only).
  // scores: scratch of n_rows * attend_scores_floats(g.block_size) floats.
  void (*attend_group_rows)(const attend_row* rows, int n_rows, const kv_group& g, int head_size, float scale,
                            float* scores);
  // attend_group for rows that each read their own group groups[r] (the kv heads of one sequence over
  // the same blocks: MHA at small batch), walked 16 keys at a time across the rows, so consecutive reads
  // are the heads' adjacent runs of a block rather than one head's blocks after another. Every row gets
  // the bits attend_group gives it alone. groups[0].ahead (if set) advances by the bytes all rows read.
  // scores: scratch of n_rows * attend_scores_floats(block_size) floats.
  void (*attend_heads)(const attend_row* rows, const kv_group* groups, int n_rows, int head_size, float scale,
                       float* scores);
  // out[n] = fp16 of x[n], rounded to nearest even (f32_to_f16's bits): how K/V enter an fp16 cache.
  void (*f32_to_f16_row)(std::uint16_t* out, const float* x, int n);
  // LayerNorm of one row (GPT-2): out[n] = (x[n] - mean) * rstd * weight[n] + bias[n], with
  // rstd = 1 / sqrt(var + eps), var the mean of (x - mean)^2 (two passes, as torch). Each row depends on
  // itself only, so the norm is batch invariant.
  void (*layernorm)(float* out, const float* x, const float* weight, const float* bias, int n, float eps);
  // x[n] = 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))) in place: GPT-2's "gelu_new".
  void (*gelu_tanh)(float* x, int n);
  // matmul_rows_bf16 rounds x to bf16 and multiplies pairs with AVX512-BF16 (vdpbf16ps), as
  // llama.cpp's and PyTorch's bf16 matmuls do: 32 weights an instruction, memory-bound where the
  // exact widening path is not, but results differ from the fp32 path by the activations' rounding
  // (still batch invariant: each output depends on its own x row and w row only).
  bool bf16_rounds_activations = false;
  // Block-quantized weights (ggml formats, ggml_blocks.hpp). Each token's activations are quantized
  // first, in the format llama.cpp pairs with the weight type (its vec_dot_type) and with ggml's
  // arithmetic, so results track llama.cpp's fast path: q8_0 blocks (per 32) for q4_0, q5_0, q8_0
  // and iq4_nl; q8_1 (per 32, with the block's sum) for q4_1 and q5_1; q8_K (per 256, with sums per
  // 16) for the K-quants and iq4_xs. xq: activation_row_bytes(wtype, n) bytes for one token.
  void (*quantize_activations)(std::byte* xq, const float* x, dtype wtype, int n) = nullptr;
  // out[t, o] = row o of w · token t's activations, for t < n_tokens and o in [o_begin, o_end);
  // xq: [n_tokens, activation_row_bytes(w.type, w.cols)], out: [n_tokens, w.rows]. Integer sums per
  // block are exact (as ggml's); each output's fp32 arithmetic depends only on its own weight row and
  // token (batch invariance), though its order differs between tables (so may the last bits).
  // Every table computes all 12 formats on its own instruction set.
  void (*matmul_blocks)(float* out, const std::byte* xq, const weight& w, int n_tokens, int o_begin,
                        int o_end) = nullptr;
};

// Bytes of one token's quantized activations for a block-quantized weight type of width n.
std::size_t activation_row_bytes(dtype wtype, int n);

// The blocks quantize_activations writes, with ggml's values (block_q8_0, block_q8_1, block_q8_K) but
// fp32 scales (q8_0/q8_1's fp16 scale widened exactly), so the dot products convert nothing.
// 32 activations: x[i] ~= d * qs[i]; q8_1 also carries s = fp16(d' * sum(qs)) widened, d' being d
// before its fp16 rounding (ggml's arithmetic); q8_0 has s = 0.
struct act_block32 {
  float d;
  float s;
  std::int8_t qs[32];
};
// 256 activations (q8_K): x[i] ~= d * qs[i]; bsums[j] = sum of qs[16 j .. 16 j + 15].
struct act_block256 {
  float d;
  std::int8_t qs[256];
  std::int16_t bsums[16];
};

// Best table for this CPU, or the one forced by name ("scalar", "avx2", "avx2_vnni", "avx512",
// "avx512_vnni", "avx512_bf16"; "auto" = best).
// Returns nullptr when the forced instruction set is unknown or not supported by this CPU.
const kernel_table* kernel_table_select(std::string_view forced = "auto");
// Every table this CPU can run (tests and benchmarks loop over them).
std::span<const kernel_table* const> kernel_tables_supported();
// Whether table kt has a panel kernel for block type t, so that repacking t's matrices into row panels
// at load (model/ggml_block_panels.hpp) pays; every table computes panel-packed weights either way.
bool block_panels_pay(const kernel_table& kt, dtype t);

// Read access to one layer of the paged KV pool. Inside a block, each kv head's keys are contiguous
// (vLLM's layout): element d of kv head h of token slot s of block b lives at
//   k_base + b * block_stride + (h * block_size + s) * head_size + d     (same for v_base),
// so attention streams one head's block as a single run of block_size * head_size elements (with the
// slot-major layout, a head's keys were block_size short runs kv_dim apart, and an fp16 cache decoded
// no faster than fp32: bench_attention). Units: elements of `type` (f32, f16, i8: the q8 cache, or
// f8_e4m3 / f8_e5m2: the fp8 caches, scale 1.0).
// An i8 cache has one fp32 scale per row of head_size elements (per token and kv head, as llama.cpp's
// q8_0 has one per 32): the row at element offset i has its scale at k_scales[i / head_size].
struct paged_kv_layer {
  void* k_base = nullptr;
  void* v_base = nullptr;
  std::size_t block_stride = 0;
  int block_size = 0;
  int head_size = 0;
  dtype type = dtype::f32;
  float* k_scales = nullptr;  // i8 only
  float* v_scales = nullptr;

  // Offset of kv head h of slot s from its block's start.
  std::size_t head_offset(int kv_head, int slot) const {
    return (static_cast<std::size_t>(kv_head) * block_size + slot) * head_size;
  }
  // Element d of kv head h of slot s of block b, widened to fp32 (the reference and tests read it so).
  float key(std::size_t block, int kv_head, int slot, int d) const {
    return element(k_base, k_scales, block, kv_head, slot, d);
  }
  float value(std::size_t block, int kv_head, int slot, int d) const {
    return element(v_base, v_scales, block, kv_head, slot, d);
  }

 private:
  float element(const void* base, const float* scales, std::size_t block, int kv_head, int slot, int d) const {
    const std::size_t i = block * block_stride + head_offset(kv_head, slot) + d;
    if (type == dtype::i8) return static_cast<const std::int8_t*>(base)[i] * scales[i / head_size];
    if (type == dtype::f8_e4m3) return fp8_e4m3_to_f32(static_cast<const std::uint8_t*>(base)[i]);
    if (type == dtype::f8_e5m2) return fp8_e5m2_to_f32(static_cast<const std::uint8_t*>(base)[i]);
    return type == dtype::f16 ? f16_to_f32(static_cast<const std::uint16_t*>(base)[i])
                              : static_cast<const float*>(base)[i];
  }
};

// One flat step batch as attention sees it: token t belongs to sequence seq_of_token[t] and sits at
// position pos_of_token[t]; it attends over positions 0..pos inclusive of its sequence, whose KV lives
// in the blocks block_tables[seq_block_offset[seq] ...]. The token's own K/V must already be written.
struct attention_batch {
  const std::int32_t* seq_of_token = nullptr;     // [n_tokens]
  const std::int32_t* pos_of_token = nullptr;     // [n_tokens]
  const std::int32_t* block_tables = nullptr;     // concatenated block ids of all sequences
  const std::int32_t* seq_block_offset = nullptr; // [n_seqs] start of each sequence's table
  int n_tokens = 0;
  int max_context = 0;                            // longest pos+1 in the batch (score buffer size)
  int window = 0;  // sliding-window attention: > 0, a token at pos sees only positions > pos - window
};

// The first position a token at pos attends to.
constexpr int attention_start(const attention_batch& b, int pos) {
  return b.window > 0 && pos >= b.window ? pos - b.window + 1 : 0;
}

namespace reference {
void matmul(float* out, const float* x, const float* w, int n_tokens, int n_in, int n_out);
// out[n_tokens, w.rows] = x[n_tokens, w.cols] · w^T, any weight dtype; i8 quantizes each token with
// quantize_token_u8 and sums the int8 products exactly, as the tables do (kernel_table::matmul_i8);
// block-quantized weights are decoded row by row (dequantize_blocks) and multiplied with the
// unquantized x in fp32: the exact product the quantized activations approximate.
void matmul(float* out, const float* x, const weight& w, int n_tokens);
// kernel_table::quantize_token_u8's arithmetic, plainly (the scalar table's entry).
float quantize_token_u8(std::uint8_t* xq, const float* x, int n, int n_pad);
void rmsnorm(float* out, const float* x, const float* weight, int n_rows, int dim, float eps);
// Rotates interleaved pairs (2i, 2i+1) inside each head of x[n_tokens, n_heads*head_size] by
// pos * theta^(-2i/head_size), as run.c does.
// run.c's RoPE, in place: interleaved pairs, angle pos * theta^(-2i/head_size), layout kept.
void rope(float* x, const std::int32_t* positions, int n_tokens, int n_heads, int head_size, float theta);
// Either pairing; pair i of every head turns by positions[t] * inv_freq[i], inv_freq: [head_size/2];
// the result is in rotate-half order (see rope_style).
void rope(float* x, const std::int32_t* positions, int n_tokens, int n_heads, int head_size, const float* inv_freq,
          rope_style style);
void softmax(float* x, int n);
void swiglu(float* gate, const float* up, int n);
// LayerNorm of each row of x[n_rows, dim] with weight and bias [dim] (torch.nn.LayerNorm).
void layernorm(float* out, const float* x, const float* weight, const float* bias, int n_rows, int dim, float eps);
// x[n] = gelu_tanh(x[n]), with std::tanh.
void gelu_tanh(float* x, int n);
// out[n_tokens, n_heads*head_size]; q[n_tokens, n_heads*head_size]; grouped-query attention
// (query head h reads kv head h / (n_heads / n_kv_heads)) through the block tables.
void paged_attention(float* out, const float* q, const paged_kv_layer& kv, const attention_batch& batch,
                     int n_heads, int n_kv_heads, int head_size);
}  // namespace reference

namespace ops {
// TBB-parallel versions with the reference's signatures, running table's inner loops.
void matmul(const kernel_table& kt, float* out, const float* x, const float* w, int n_tokens, int n_in,
            int n_out);
// out[n_tokens, w.rows] = x[n_tokens, w.cols] · w^T, dispatched on w's dtype. i8 and the block formats
// quantize x once (one pass, over tokens, into a per-thread buffer reused across calls), then run
// matmul_i8 / matmul_blocks over tiles of rows. Up to 16 tokens each thread takes one contiguous share
// of the rows.
void matmul(const kernel_table& kt, float* out, const float* x, const weight& w, int n_tokens);
// One product of a matmul_group: out[n_tokens, w.rows] = x · w^T.
struct matmul_output {
  float* out;
  weight w;
};
// Several matmuls of one input (Q, K and V; gate and up) in one parallel_for over all their row tiles,
// so a decode step pays one fork/join for the group and the i8 ones share one quantization of x (the
// block ones one per activation format: q8_0, q8_1, q8_K).
// Every w has x's width; each output gets the bits matmul() alone would give it.
void matmul_group(const kernel_table& kt, std::span<const matmul_output> outputs, const float* x, int n_tokens);
// x[t, i] += bias[i] for x[n_tokens, n].
void add_bias(float* x, const float* bias, int n_tokens, int n);
// x[n_tokens, dim] += y[n_tokens, dim] (the residual stream).
void add(float* x, const float* y, int n_tokens, int dim);
void rmsnorm(const kernel_table& kt, float* out, const float* x, const float* weight, int n_rows, int dim,
             float eps);
// add(x, y) then rmsnorm(out, x), in one pass over each row: the residual add and the norm after it.
void add_rmsnorm(const kernel_table& kt, float* out, float* x, const float* y, const float* weight, int n_tokens,
                 int dim, float eps);
// The step's rotation table, computed once and shared by every layer: cos/sin[t, i] of
// positions[t] * inv_freq[i], times scale (YaRN's attention factor); cos, sin: [n_tokens, n_freq].
void rope_angles(float* cos, float* sin, const std::int32_t* positions, int n_tokens, const float* inv_freq,
                 int n_freq, float scale = 1.0f);
// Rotates x[n_tokens, n_heads*head_size] by a table from rope_angles (n_freq = head_size/2), as
// reference::rope with inv_freq: the result is in rotate-half order. head_size <= 1024.
void rope(float* x, const float* cos, const float* sin, int n_tokens, int n_heads, int head_size, rope_style style);
void swiglu(const kernel_table& kt, float* gate, const float* up, int n_tokens, int dim);
void layernorm(const kernel_table& kt, float* out, const float* x, const float* weight, const float* bias, int n_rows,
               int dim, float eps);
// add(x, y) then layernorm(out, x), row by row (add_rmsnorm's LayerNorm twin).
void add_layernorm(const kernel_table& kt, float* out, float* x, const float* y, const float* weight, const float* bias,
                   int n_tokens, int dim, float eps);
void gelu_tanh(const kernel_table& kt, float* x, int n_tokens, int dim);
void paged_attention(const kernel_table& kt, float* out, const float* q, const paged_kv_layer& kv,
                     const attention_batch& batch, int n_heads, int n_kv_heads, int head_size);
}  // namespace ops

}  // namespace pagedserve::kernels
