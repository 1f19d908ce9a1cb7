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

#include "pagedserve/ggml_blocks.hpp"
#include "pagedserve/gguf.hpp"
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
  const auto dir = test::shared_dir();
  PAGEDSERVE_REQUIRE_SHARED(dir);
  simdjson::dom::parser parser;
  const simdjson::dom::element root = parser.load((dir / "golden" / "gguf" / "quant_golden.json").string());
  std::map<std::string, int> rows_checked;  // per type
  double worst_sum = 0.0;
  for (auto [file_name, file] : root["files"].get_object()) {
    auto f = gguf_file::open(dir / "golden" / "gguf" / std::string(file_name));
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

}  // namespace
}  // namespace pagedserve
