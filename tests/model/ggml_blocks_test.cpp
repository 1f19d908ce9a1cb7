// ggml's block formats (ggml_blocks.hpp): decoding against ggml's own output (the goldens written by
// llama.cpp), against blocks built bit by bit here from the format definitions (for the types the
// goldens lack), and encoding: round trips, error bounds and hostile inputs.
#include <gtest/gtest.h>
#include <simdjson.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "model/ggml_blocks.hpp"
#include "model/gguf.hpp"
#include "pagedserve/weight.hpp"
#include "support/test_paths.hpp"

namespace pagedserve {
namespace {

const dtype all_block_types[] = {dtype::q4_0, dtype::q4_1, dtype::q5_0, dtype::q5_1, dtype::q8_0, dtype::q2_k,
                                 dtype::q3_k, dtype::q4_k, dtype::q5_k, dtype::q6_k, dtype::iq4_nl, dtype::iq4_xs};

std::vector<float> decode(dtype t, const std::vector<std::uint8_t>& bytes) {
  const block_layout l = block_layout_of(t);
  EXPECT_EQ(bytes.size() % static_cast<std::size_t>(l.bytes), 0u);
  std::vector<float> out(bytes.size() / l.bytes * l.elements);
  dequantize_blocks(t, out.data(), reinterpret_cast<const std::byte*>(bytes.data()), out.size());
  return out;
}

void put_f16(std::vector<std::uint8_t>& b, std::size_t at, float v) {
  const std::uint16_t h = f32_to_f16(v);
  ASSERT_EQ(f16_to_f32(h), v) << "test scales are chosen exact in fp16";
  b[at] = static_cast<std::uint8_t>(h & 0xff);
  b[at + 1] = static_cast<std::uint8_t>(h >> 8);
}

// Sets bit `bit` of the little-endian bit string starting at b[at].
void set_bit(std::vector<std::uint8_t>& b, std::size_t at, std::size_t bit) {
  b[at + bit / 8] = static_cast<std::uint8_t>(b[at + bit / 8] | (1u << (bit % 8)));
}

// Puts `value` (< 16) into nibble `high` of byte b[at].
void put_nibble(std::vector<std::uint8_t>& b, std::size_t at, bool high, unsigned value) {
  b[at] = static_cast<std::uint8_t>(b[at] | (value << (high ? 4 : 0)));
}

// ---- Goldens: ggml's own dequantization of llama-quantize's files ----

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

// The decoded row `row` of a [rows, cols] tensor of any type pagedserve reads.
std::vector<float> tensor_row(const gguf_tensor_info& t, dtype type, std::size_t row) {
  const auto cols = static_cast<std::size_t>(t.ne[0]);
  std::vector<float> out(cols);
  if (is_block_quantized(type)) {
    dequantize_blocks(type, out.data(), t.data + row * block_row_bytes(type, static_cast<int>(cols)), cols);
  } else {
    weight_row_to_f32(out.data(), weight{t.data, type, static_cast<int>(t.ne.size() > 1 ? t.ne[1] : 1), static_cast<int>(cols)},
                      static_cast<int>(row));
  }
  return out;
}

// The JSON's values have 6 significant digits: rounding them moves a value by at most half a unit of
// its 6th digit, 5e-6 of it relative (leading digit 1) and less otherwise, so 1e-5 relative accepts
// every correctly printed value and nothing a scale or bit position off would give (those move values
// by a level, percents). A last-bit difference cannot show at 6 digits, but it does in the sums: they
// are printed with 12 digits, taken in double over ggml's floats (ours match them to 5e-12), and one
// value one ulp off (2^-24 of it) moves a row's sum by about 1e-8 of it, so they are held to 1e-9.
TEST(ggml_blocks_golden, rows_decode_as_ggml_decodes_them) {
  const auto dir = test::data_file("golden/gguf");
  PAGEDSERVE_REQUIRE_DATA(dir);
  simdjson::dom::parser parser;
  const simdjson::dom::element root = parser.load((dir / "quant_golden.json").string());
  std::map<std::string, int> rows_checked;  // per type
  double worst_sum = 0.0;
  for (auto [file_name, file] : root["files"].get_object()) {
    auto f = gguf_file::open(dir / std::string(file_name));
    ASSERT_TRUE(f.has_value()) << f.error();
    for (auto [tensor_name, tensor] : file["tensors"].get_object()) {
      SCOPED_TRACE(std::string(file_name) + " " + std::string(tensor_name));
      const gguf_tensor_info* t = f->tensor(tensor_name);
      ASSERT_NE(t, nullptr);
      ASSERT_EQ(lower(gguf_tensor_type_name(t->type)), lower(std::string(std::string_view(tensor["type"]))));
      const std::optional<dtype> type = dtype_of_ggml_type(t->type);
      ASSERT_TRUE(type.has_value());
      for (auto [row_key, want] : tensor["rows"].get_object()) {
        const std::size_t row = std::stoul(std::string(row_key));
        SCOPED_TRACE("row " + std::to_string(row));
        const std::vector<float> got = tensor_row(*t, *type, row);
        std::size_t j = 0;
        for (double v : want["first"].get_array()) {
          EXPECT_NEAR(got[j], v, 1e-5 * std::fabs(v)) << "value " << j;
          ++j;
        }
        EXPECT_EQ(j, std::min<std::size_t>(32, got.size()));
        double sum = 0.0, sumsq = 0.0;
        for (float x : got) sum += x, sumsq += static_cast<double>(x) * x;
        const double want_sum = double(want["sum"]), want_sumsq = double(want["sumsq"]);
        EXPECT_NEAR(sum, want_sum, 1e-9 * std::fabs(want_sum));
        EXPECT_NEAR(sumsq, want_sumsq, 1e-9 * want_sumsq);
        worst_sum = std::max(worst_sum, std::fabs(sum - want_sum) / std::max(std::fabs(want_sum), 1e-30));
        ++rows_checked[lower(std::string(dtype_name(*type)))];
      }
    }
  }
  for (const char* t : {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k", "f16", "f32"}) EXPECT_GT(rows_checked[t], 0) << t;
  std::printf("worst relative difference of a row sum from ggml's: %.3g\n", worst_sum);
}


// llama-quantize's own output for the same fp32 weights (the goldens' F32 file is their source, no
// importance matrix): q4_0 and q8_0 must be its blocks byte for byte (same rule), the searched types
// must come within 1% of its error (they search the same way, with other weights and sums in
// another order; measured: q4_K 1.0065x, q5_K 1.003x, q6_K 0.978x of ggml's error).
TEST(ggml_blocks_golden, encoders_match_llama_quantize) {
  const auto dir = test::data_file("golden/gguf");
  PAGEDSERVE_REQUIRE_DATA(dir);
  const auto source = gguf_file::open(dir / "qtiny-F32.gguf");
  ASSERT_TRUE(source.has_value()) << source.error();
  std::map<std::string, double> ours_error, ggml_error;  // per type: sums of squared errors
  for (const char* name : {"qtiny-Q8_0.gguf", "qtiny-Q4_0.gguf", "qtiny-Q4_K_M.gguf", "qtiny-Q5_K_M.gguf"}) {
    const auto f = gguf_file::open(dir / name);
    ASSERT_TRUE(f.has_value()) << f.error();
    for (const gguf_tensor_info& t : f->tensors()) {
      const std::optional<dtype> type = dtype_of_ggml_type(t.type);
      if (!type || !is_block_quantized(*type)) continue;
      SCOPED_TRACE(std::string(name) + " " + t.name);
      const gguf_tensor_info* s = source->tensor(t.name);
      ASSERT_NE(s, nullptr);
      ASSERT_EQ(s->type, 0u);  // F32
      const std::size_t n = t.n_elements();
      const std::span<const float> x(reinterpret_cast<const float*>(s->data), n);
      const std::vector<std::byte> ours = quantize_blocks(*type, x);
      ASSERT_EQ(ours.size(), *t.n_bytes);
      const std::string key(dtype_name(*type));
      if (*type == dtype::q4_0 || *type == dtype::q8_0) {
        EXPECT_EQ(std::memcmp(ours.data(), t.data, ours.size()), 0);
        continue;
      }
      std::vector<float> ours_values(n), ggml_values(n);
      dequantize_blocks(*type, ours_values.data(), ours.data(), n);
      dequantize_blocks(*type, ggml_values.data(), t.data, n);
      for (std::size_t i = 0; i < n; ++i) {
        ours_error[key] += (static_cast<double>(ours_values[i]) - x[i]) * (static_cast<double>(ours_values[i]) - x[i]);
        ggml_error[key] += (static_cast<double>(ggml_values[i]) - x[i]) * (static_cast<double>(ggml_values[i]) - x[i]);
      }
    }
  }
  for (const char* t : {"q4_k", "q5_k", "q6_k"}) {
    ASSERT_GT(ggml_error[t], 0.0) << t;
    const double ratio = std::sqrt(ours_error[t] / ggml_error[t]);
    std::printf("%s: RMS error %.4f x llama-quantize's\n", t, ratio);
    EXPECT_LE(ratio, 1.01) << t;
  }
}

// ---- Blocks built bit by bit from the format definitions (ggml-common.h's structs) ----
// Scales are powers of two or small multiples, levels small integers: every product is exact, so the
// expected values do not depend on the order of ggml's products (the goldens check that order).

// Legacy 32-weight types: weight j < 16 is the low nibble of qs[j], weight j + 16 its high nibble;
// the 5-bit types' fifth bit of weight j is bit j of the little-endian qh.
TEST(ggml_blocks_layout, q4_0_q4_1_q8_0_blocks) {
  std::vector<std::uint8_t> q40(18), q41(20), q80(34);
  put_f16(q40, 0, 0.25f);
  put_f16(q41, 0, 0.5f);
  put_f16(q41, 2, -3.0f);
  put_f16(q80, 0, 0.125f);
  unsigned level[32];
  for (unsigned j = 0; j < 32; ++j) {
    level[j] = (j * 7 + 3) % 16;
    put_nibble(q40, 2 + j % 16, j >= 16, level[j]);
    put_nibble(q41, 4 + j % 16, j >= 16, level[j]);
    q80[2 + j] = static_cast<std::uint8_t>(static_cast<std::int8_t>(static_cast<int>(j * 8) - 128));
  }
  const auto a = decode(dtype::q4_0, q40), b = decode(dtype::q4_1, q41), c = decode(dtype::q8_0, q80);
  for (unsigned j = 0; j < 32; ++j) {
    EXPECT_EQ(a[j], (static_cast<float>(level[j]) - 8.0f) * 0.25f) << j;
    EXPECT_EQ(b[j], static_cast<float>(level[j]) * 0.5f - 3.0f) << j;
    EXPECT_EQ(c[j], static_cast<float>(static_cast<int>(j * 8) - 128) * 0.125f) << j;
  }
}

TEST(ggml_blocks_layout, q5_0_q5_1_blocks) {
  std::vector<std::uint8_t> q50(22), q51(24);
  put_f16(q50, 0, 0.5f);
  put_f16(q51, 0, 0.25f);
  put_f16(q51, 2, 1.5f);
  unsigned level[32];
  for (unsigned j = 0; j < 32; ++j) {
    level[j] = (j * 11 + 5) % 32;
    put_nibble(q50, 6 + j % 16, j >= 16, level[j] & 15);
    put_nibble(q51, 8 + j % 16, j >= 16, level[j] & 15);
    if (level[j] & 16) set_bit(q50, 2, j), set_bit(q51, 4, j);
  }
  const auto a = decode(dtype::q5_0, q50), b = decode(dtype::q5_1, q51);
  for (unsigned j = 0; j < 32; ++j) {
    EXPECT_EQ(a[j], (static_cast<float>(level[j]) - 16.0f) * 0.5f) << j;
    EXPECT_EQ(b[j], static_cast<float>(level[j]) * 0.25f + 1.5f) << j;
  }
}

// q2_K: scales[16] (sub-block of 16 weights: low nibble scale, high nibble min), qs[64], d, dmin.
// Weight i = 128h + 32c + r (r < 32) is bits 2c..2c+1 of qs[32h + r]; its sub-block is i / 16.
TEST(ggml_blocks_layout, q2_k_block) {
  std::vector<std::uint8_t> b(84);
  put_f16(b, 80, 0.5f);
  put_f16(b, 82, 0.25f);
  unsigned scale[16], min[16], level[256];
  for (unsigned s = 0; s < 16; ++s) {
    scale[s] = (s * 3 + 1) % 16;
    min[s] = (s * 7 + 2) % 16;
    b[s] = static_cast<std::uint8_t>(scale[s] | (min[s] << 4));
  }
  for (unsigned i = 0; i < 256; ++i) {
    level[i] = (i * 5 + i / 7) % 4;
    const unsigned h = i / 128, c = i % 128 / 32, r = i % 32;
    b[16 + 32 * h + r] = static_cast<std::uint8_t>(b[16 + 32 * h + r] | (level[i] << (2 * c)));
  }
  const auto got = decode(dtype::q2_k, b);
  for (unsigned i = 0; i < 256; ++i)
    EXPECT_EQ(got[i], 0.5f * static_cast<float>(scale[i / 16]) * static_cast<float>(level[i]) -
                          0.25f * static_cast<float>(min[i / 16])) << i;
}

// q3_K: hmask[32], qs[64], scales[12], d. Level q in -4..3 is stored as q + 4: its low two bits as
// q2_K's, its third bit as bit i / 32 of hmask[i % 32]. Scale s (6 bits, stored + 32): low nibble in
// scales[s % 8] (low nibble for s < 8, high for s >= 8), top two bits at bit 2 * (s / 4) of
// scales[8 + s % 4]. Weight i's scale is s = i / 16.
TEST(ggml_blocks_layout, q3_k_block) {
  std::vector<std::uint8_t> b(110);
  put_f16(b, 108, 0.25f);
  int scale[16], level[256];
  for (unsigned s = 0; s < 16; ++s) {
    scale[s] = static_cast<int>((s * 13 + 5) % 64) - 32;
    const unsigned stored = static_cast<unsigned>(scale[s] + 32);
    put_nibble(b, 96 + s % 8, s >= 8, stored & 15);
    b[96 + 8 + s % 4] = static_cast<std::uint8_t>(b[96 + 8 + s % 4] | ((stored >> 4) << (2 * (s / 4))));
  }
  for (unsigned i = 0; i < 256; ++i) {
    level[i] = static_cast<int>((i * 3 + i / 5) % 8) - 4;
    const unsigned stored = static_cast<unsigned>(level[i] + 4);
    const unsigned h = i / 128, c = i % 128 / 32, r = i % 32;
    b[32 + 32 * h + r] = static_cast<std::uint8_t>(b[32 + 32 * h + r] | ((stored & 3) << (2 * c)));
    if (stored & 4) b[i % 32] = static_cast<std::uint8_t>(b[i % 32] | (1u << (i / 32)));
  }
  const auto got = decode(dtype::q3_k, b);
  for (unsigned i = 0; i < 256; ++i)
    EXPECT_EQ(got[i], 0.25f * static_cast<float>(scale[i / 16]) * static_cast<float>(level[i])) << i;
}

// q4_K / q5_K scales[12]: sub-block j's 6-bit scale and min. j < 4: low 6 bits of bytes j (scale) and
// j + 4 (min). j >= 4: low nibbles in byte j + 4 (scale low, min high), top two bits in bits 6..7 of
// bytes j - 4 (scale) and j (min).
void put_k_scales(std::vector<std::uint8_t>& b, std::size_t at, const unsigned* scale, const unsigned* min) {
  for (unsigned j = 0; j < 8; ++j) {
    if (j < 4) {
      b[at + j] = static_cast<std::uint8_t>(b[at + j] | scale[j]);
      b[at + j + 4] = static_cast<std::uint8_t>(b[at + j + 4] | min[j]);
    } else {
      b[at + j + 4] = static_cast<std::uint8_t>(b[at + j + 4] | (scale[j] & 15) | ((min[j] & 15) << 4));
      b[at + j - 4] = static_cast<std::uint8_t>(b[at + j - 4] | ((scale[j] >> 4) << 6));
      b[at + j] = static_cast<std::uint8_t>(b[at + j] | ((min[j] >> 4) << 6));
    }
  }
}

// q4_K: d, dmin, scales[12], qs[128]; q5_K adds qh[32] before qs. Weight i = 64p + 32u + r (r < 32)
// is nibble u of qs[32p + r], its fifth bit bit i / 32 of qh[r]; its sub-block is i / 32.
TEST(ggml_blocks_layout, q4_k_q5_k_blocks) {
  std::vector<std::uint8_t> q4(144), q5(176);
  for (auto* b : {&q4, &q5}) put_f16(*b, 0, 0.5f), put_f16(*b, 2, 0.125f);
  unsigned scale[8], min[8], level[256];
  for (unsigned j = 0; j < 8; ++j) scale[j] = (j * 23 + 7) % 64, min[j] = (j * 37 + 50) % 64;
  put_k_scales(q4, 4, scale, min);
  put_k_scales(q5, 4, scale, min);
  for (unsigned i = 0; i < 256; ++i) {
    level[i] = (i * 7 + i / 9) % 32;
    const unsigned p = i / 64, u = i % 64 / 32, r = i % 32;
    put_nibble(q4, 16 + 32 * p + r, u == 1, level[i] & 15);
    put_nibble(q5, 48 + 32 * p + r, u == 1, level[i] & 15);
    if (level[i] & 16) q5[16 + r] = static_cast<std::uint8_t>(q5[16 + r] | (1u << (i / 32)));
  }
  const auto a = decode(dtype::q4_k, q4), b = decode(dtype::q5_k, q5);
  for (unsigned i = 0; i < 256; ++i) {
    const float d = 0.5f * static_cast<float>(scale[i / 32]), m = 0.125f * static_cast<float>(min[i / 32]);
    EXPECT_EQ(a[i], d * static_cast<float>(level[i] & 15) - m) << i;
    EXPECT_EQ(b[i], d * static_cast<float>(level[i]) - m) << i;
  }
}

// q6_K: ql[128], qh[64], int8 scales[16], d. Weight i = 128h + 32c + r: low nibble = nibble c / 2 of
// ql[64h + 32 (c % 2) + r], top two bits = bits 2c..2c+1 of qh[32h + r], level - 32; scale i / 16.
TEST(ggml_blocks_layout, q6_k_block) {
  std::vector<std::uint8_t> b(210);
  put_f16(b, 208, 0.0625f);
  int scale[16];
  unsigned level[256];
  for (unsigned s = 0; s < 16; ++s) {
    scale[s] = static_cast<int>(s * 17 % 256) - 128;
    b[192 + s] = static_cast<std::uint8_t>(static_cast<std::int8_t>(scale[s]));
  }
  for (unsigned i = 0; i < 256; ++i) {
    level[i] = (i * 13 + i / 11) % 64;
    const unsigned h = i / 128, c = i % 128 / 32, r = i % 32;
    put_nibble(b, 64 * h + 32 * (c % 2) + r, c >= 2, level[i] & 15);
    b[128 + 32 * h + r] = static_cast<std::uint8_t>(b[128 + 32 * h + r] | ((level[i] >> 4) << (2 * c)));
  }
  const auto got = decode(dtype::q6_k, b);
  for (unsigned i = 0; i < 256; ++i)
    EXPECT_EQ(got[i], 0.0625f * static_cast<float>(scale[i / 16]) * (static_cast<float>(level[i]) - 32.0f)) << i;
}

// ggml's kvalues_iq4nl, written out again here rather than taken from the implementation.
constexpr int iq4_table[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

// IQ4_NL: d, qs[16] as q4_0's nibbles, weight = d * table[nibble].
TEST(ggml_blocks_layout, iq4_nl_block) {
  std::vector<std::uint8_t> b(36);  // two blocks
  put_f16(b, 0, 0.5f);
  put_f16(b, 18, -0.25f);
  unsigned index[64];
  for (unsigned i = 0; i < 64; ++i) {
    index[i] = (i * 5 + i / 3) % 16;
    put_nibble(b, 18 * (i / 32) + 2 + i % 16, i % 32 >= 16, index[i]);
  }
  const auto got = decode(dtype::iq4_nl, b);
  for (unsigned i = 0; i < 64; ++i)
    EXPECT_EQ(got[i], (i < 32 ? 0.5f : -0.25f) * static_cast<float>(iq4_table[index[i]])) << i;
}

// IQ4_XS: d, u16 scales_h, scales_l[4], qs[128]. Sub-block s (32 weights): 6-bit scale stored + 32,
// low nibble = nibble s % 2 of scales_l[s / 2], top two bits = bits 2s..2s+1 of scales_h. Weight
// 32s + r: nibble r / 16 of qs[16s + r % 16].
TEST(ggml_blocks_layout, iq4_xs_block) {
  std::vector<std::uint8_t> b(136);
  put_f16(b, 0, 0.125f);
  int scale[8];
  unsigned index[256];
  for (unsigned s = 0; s < 8; ++s) {
    scale[s] = static_cast<int>((s * 29 + 3) % 64) - 32;
    const unsigned stored = static_cast<unsigned>(scale[s] + 32);
    put_nibble(b, 4 + s / 2, s % 2 == 1, stored & 15);
    for (unsigned k = 0; k < 2; ++k)
      if ((stored >> (4 + k)) & 1) set_bit(b, 2, 2 * s + k);
  }
  for (unsigned i = 0; i < 256; ++i) {
    index[i] = (i * 11 + i / 17) % 16;
    put_nibble(b, 8 + 16 * (i / 32) + i % 16, i % 32 >= 16, index[i]);
  }
  const auto got = decode(dtype::iq4_xs, b);
  for (unsigned i = 0; i < 256; ++i)
    EXPECT_EQ(got[i], 0.125f * static_cast<float>(scale[i / 32]) * static_cast<float>(iq4_table[index[i]])) << i;
}

// Every bit pattern decodes without a trap: NaN and infinite fp16 scales give NaN or inf, not a crash.
TEST(ggml_blocks_layout, non_finite_scales_decode) {
  for (dtype t : all_block_types) {
    const block_layout l = block_layout_of(t);
    std::vector<std::uint8_t> b(static_cast<std::size_t>(l.bytes), 0xff);  // all scales NaN
    const auto got = decode(t, b);
    EXPECT_TRUE(std::any_of(got.begin(), got.end(), [](float v) { return std::isnan(v); })) << dtype_name(t);
  }
}

// ---- Encoders ----

std::vector<float> round_trip(dtype t, const std::vector<float>& x) {
  const std::vector<std::byte> blocks = quantize_blocks(t, x);
  EXPECT_EQ(blocks.size(), x.size() / block_layout_of(t).elements * block_layout_of(t).bytes);
  std::vector<float> out(x.size());
  dequantize_blocks(t, out.data(), blocks.data(), out.size());
  return out;
}

double rms_error(const std::vector<float>& x, const std::vector<float>& y) {
  double e = 0.0;
  for (std::size_t i = 0; i < x.size(); ++i) e += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
  return std::sqrt(e / static_cast<double>(x.size()));
}

std::vector<float> normal_values(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> x(n);
  for (float& v : x) v = dist(rng);
  return x;
}

// The plain quantizer each format is measured against: per group of the format's finest scale, the
// scale from the group's extremes (symmetric: largest magnitude to the most negative level; affine:
// [min(x, 0), max] to [0, top]), rounded to fp16 and never quantized further (a favour to it), then
// every weight rounded to the nearest level.
struct plain_spec {
  int group;
  enum { symmetric, affine, table } kind;
  int lo, hi;  // symmetric/affine levels; table: IQ4's
};

plain_spec plain_spec_of(dtype t) {
  switch (t) {
    case dtype::q4_0: return {32, plain_spec::symmetric, -8, 7};
    case dtype::q4_1: return {32, plain_spec::affine, 0, 15};
    case dtype::q5_0: return {32, plain_spec::symmetric, -16, 15};
    case dtype::q5_1: return {32, plain_spec::affine, 0, 31};
    case dtype::q8_0: return {32, plain_spec::symmetric, -127, 127};
    case dtype::q2_k: return {16, plain_spec::affine, 0, 3};
    case dtype::q3_k: return {16, plain_spec::symmetric, -4, 3};
    case dtype::q4_k: return {32, plain_spec::affine, 0, 15};
    case dtype::q5_k: return {32, plain_spec::affine, 0, 31};
    case dtype::q6_k: return {16, plain_spec::symmetric, -32, 31};
    default: return {32, plain_spec::table, 0, 0};
  }
}

float fp16_round(float v) { return f16_to_f32(f32_to_f16(v)); }

std::vector<float> plain_round_trip(dtype t, const std::vector<float>& x) {
  const plain_spec s = plain_spec_of(t);
  std::vector<float> y(x.size());
  for (std::size_t g = 0; g < x.size(); g += s.group) {
    const float* v = x.data() + g;
    float amax = 0.0f, max = 0.0f, lo = 0.0f, hi = v[0];
    for (int j = 0; j < s.group; ++j) {
      if (std::fabs(v[j]) > amax) amax = std::fabs(v[j]), max = v[j];
      lo = std::min(lo, v[j]), hi = std::max(hi, v[j]);
    }
    for (int j = 0; j < s.group; ++j) {
      float out = 0.0f;
      if (s.kind == plain_spec::symmetric) {
        const float d = fp16_round(max / static_cast<float>(s.lo));
        out = d == 0.0f ? 0.0f : d * std::clamp(std::nearbyint(v[j] / d), static_cast<float>(s.lo), static_cast<float>(s.hi));
      } else if (s.kind == plain_spec::affine) {
        const float d = fp16_round((hi - lo) / static_cast<float>(s.hi)), m = fp16_round(lo);
        out = d == 0.0f ? m : d * std::clamp(std::nearbyint((v[j] - m) / d), 0.0f, static_cast<float>(s.hi)) + m;
      } else {
        const float d = fp16_round(max / -127.0f);
        float best = 0.0f;
        for (int level : iq4_table)
          if (std::fabs(d * static_cast<float>(level) - v[j]) < std::fabs(best - v[j]) || level == -127) best = d * static_cast<float>(level);
        out = best;
      }
      y[g + j] = out;
    }
  }
  return y;
}

// Relative RMS error (RMS error / RMS of x) on N(0, 1) weights: the search must be no worse than the
// plain quantizer, and within each format's bound (a few percent above what it measures, to catch a
// regression, not a rounding change). q4_0 and q8_0 encode by ggml's reference rule, which is the
// plain quantizer except that it rounds with the scale before its fp16 rounding: they may exceed the
// plain quantizer by that rounding (6e-4 of the error for q8_0, whose steps are finest), no more.
TEST(ggml_blocks_encode, error_on_normal_weights_beats_the_plain_quantizer) {
  const std::map<dtype, double> bound = {
      {dtype::q4_0, 0.13}, {dtype::q4_1, 0.11}, {dtype::q5_0, 0.065}, {dtype::q5_1, 0.055}, {dtype::q8_0, 0.0085},
      {dtype::q2_k, 0.40}, {dtype::q3_k, 0.20}, {dtype::q4_k, 0.10},  {dtype::q5_k, 0.05},  {dtype::q6_k, 0.025},
      {dtype::iq4_nl, 0.11}, {dtype::iq4_xs, 0.11}};
  const std::vector<float> x = normal_values(256 * 1024, 7);
  for (dtype t : all_block_types) {
    const double ours = rms_error(x, round_trip(t, x)), plain = rms_error(x, plain_round_trip(t, x));
    std::printf("%-7s relative RMS error %.5f (plain quantizer %.5f)\n", std::string(dtype_name(t)).c_str(), ours, plain);
    const bool reference_rule = t == dtype::q4_0 || t == dtype::q8_0;
    EXPECT_LE(ours, plain * (reference_rule ? 1.001 : 1.0)) << dtype_name(t);
    EXPECT_LE(ours, bound.at(t)) << dtype_name(t);
  }
}

// Values each format represents exactly: every group of its finest scale has one scale (and offset),
// chosen so that the super-block factors are exact in fp16, and holds the levels that pin that scale
// down (the extreme levels). Quantizing them must give them back bit for bit.
std::vector<float> values_on_the_grid(dtype t, std::size_t n) {
  const plain_spec s = plain_spec_of(t);
  float scale = 0.125f, offset = 0.0f;
  if (t == dtype::q4_1 || t == dtype::q5_1) scale = 0.25f, offset = 1.5f;
  if (t == dtype::q4_k || t == dtype::q5_k) scale = 63.0f / 64.0f, offset = 63.0f / 128.0f;  // d, dmin = 2^-6, 2^-7
  if (t == dtype::q2_k) scale = 15.0f / 32.0f, offset = 15.0f / 64.0f;                      // d, dmin = 2^-5, 2^-6
  const int n_levels = s.kind == plain_spec::table ? 16 : s.hi - s.lo + 1;
  std::vector<float> x(n);
  for (std::size_t i = 0; i < n; ++i) {
    const int step = static_cast<int>(i % static_cast<std::size_t>(s.group)) * 7 % n_levels;  // step 0 first: the extreme
    if (s.kind == plain_spec::table) x[i] = scale * static_cast<float>(iq4_table[step]);
    else if (s.kind == plain_spec::symmetric) x[i] = scale * static_cast<float>(s.lo + step);
    else x[i] = scale * static_cast<float>(step) - offset;
  }
  return x;
}

TEST(ggml_blocks_encode, values_on_the_grid_round_trip_exactly) {
  for (dtype t : all_block_types) {
    const std::vector<float> x = values_on_the_grid(t, 512);
    const std::vector<float> y = round_trip(t, x);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(y[i], x[i]) << dtype_name(t) << " weight " << i;
  }
}

// The relative error does not depend on the weights' scale while fp16 holds it: real weights are
// N(0, 0.02)-like, activations can reach hundreds.
TEST(ggml_blocks_encode, error_is_scale_invariant) {
  const std::vector<float> unit = normal_values(256 * 64, 11);
  for (dtype t : all_block_types) {
    const double base = rms_error(unit, round_trip(t, unit));
    for (float sigma : {0.02f, 300.0f}) {
      std::vector<float> x = unit;
      for (float& v : x) v *= sigma;
      EXPECT_NEAR(rms_error(x, round_trip(t, x)) / sigma, base, 0.02 * base) << dtype_name(t) << " sigma " << sigma;
    }
  }
}

// Zero blocks, values too small for fp16's scale, and values too large for it: valid blocks, finite
// decodings, zeros staying exactly zero, and no value made worse than zero would be.
TEST(ggml_blocks_encode, zero_tiny_and_huge_values_give_valid_blocks) {
  const std::size_t n = 512;
  for (dtype t : all_block_types) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const std::vector<float> zeros(n, 0.0f);
    for (float v : round_trip(t, zeros)) ASSERT_EQ(v, 0.0f);
    for (float magnitude : {1e-30f, 1e-41f, 3e38f}) {
      std::vector<float> x = normal_values(n, 3);
      for (float& v : x) v *= magnitude;
      x[5] = magnitude, x[300] = -magnitude;
      const std::vector<float> y = round_trip(t, x);
      for (float v : y) ASSERT_TRUE(std::isfinite(v)) << magnitude;
      if (magnitude < 1.0f) {
        EXPECT_LE(rms_error(x, y), rms_error(x, zeros)) << magnitude;
      }
    }
    std::vector<float> mixed = normal_values(n, 4);  // one huge weight among ordinary ones
    mixed[17] = -1e30f;
    for (float v : round_trip(t, mixed)) ASSERT_TRUE(std::isfinite(v));
  }
}

// NaN or infinite inputs are a caller's bug, but still give blocks (and never undefined behaviour).
TEST(ggml_blocks_encode, non_finite_inputs_give_blocks) {
  for (dtype t : all_block_types) {
    std::vector<float> x = normal_values(512, 5);
    x[3] = std::numeric_limits<float>::quiet_NaN();
    x[260] = std::numeric_limits<float>::infinity();
    x[261] = -std::numeric_limits<float>::infinity();
    EXPECT_EQ(quantize_blocks(t, x).size(), 512 / block_layout_of(t).elements * block_layout_of(t).bytes) << dtype_name(t);
  }
}

// A block-quantized weight view (weight.hpp) reads through the same decoders, row by row and element
// by element.
TEST(ggml_blocks_encode, weight_views_of_blocks_decode_rows_and_elements) {
  const int rows = 3, cols = 512;
  const std::vector<float> x = normal_values(static_cast<std::size_t>(rows) * cols, 9);
  for (dtype t : all_block_types) {
    const std::vector<std::byte> blocks = quantize_blocks(t, x);
    std::vector<float> all(x.size());
    dequantize_blocks(t, all.data(), blocks.data(), all.size());
    const weight w{blocks.data(), t, rows, cols};
    std::vector<float> row(cols);
    for (int r = 0; r < rows; ++r) {
      weight_row_to_f32(row.data(), w, r);
      for (int c = 0; c < cols; ++c) ASSERT_EQ(row[c], all[static_cast<std::size_t>(r) * cols + c]) << dtype_name(t);
    }
    for (std::size_t i : {std::size_t{0}, std::size_t{300}, x.size() - 1}) EXPECT_EQ(weight_at(w, i), all[i]) << dtype_name(t);
  }
}

}  // namespace
}  // namespace pagedserve
