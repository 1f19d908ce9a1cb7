// pagedserve's block decoders (dequantize_blocks) against ggml's dequantize_row_* on the same bytes:
// random blocks of every type, every bit pattern of the packed integers and scales, must decode to
// the same fp32 bits.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "ggml_library.hpp"
#include "model/ggml_blocks.hpp"
#include "support/random_blocks.hpp"

namespace pagedserve {
namespace {

TEST(ggml_reference, every_block_type_decodes_to_ggml_bits) {
  const test::ggml_library ggml;
  if (!ggml.ok()) GTEST_SKIP() << ggml.why();
  std::mt19937 rng(18);
  for (const dtype t : test::block_types) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    const auto reference = ggml.dequantize(test::ggml_suffix(t));
    ASSERT_NE(reference, nullptr);
    const int n_blocks = 2048;
    const std::vector<std::byte> blocks = test::random_blocks(t, n_blocks, rng);
    const std::size_t n = static_cast<std::size_t>(n_blocks) * block_layout_of(t).elements;
    std::vector<float> theirs(n), ours(n);
    reference(blocks.data(), theirs.data(), static_cast<std::int64_t>(n));
    dequantize_blocks(t, ours.data(), blocks.data(), n);
    std::size_t differ = 0;
    for (std::size_t i = 0; i < n; ++i)
      if (std::memcmp(&theirs[i], &ours[i], sizeof(float)) != 0 && differ++ < 3)
        ADD_FAILURE() << "weight " << i << ": ggml " << theirs[i] << ", pagedserve " << ours[i];
    EXPECT_EQ(differ, 0u) << "of " << n;
  }
}

}  // namespace
}  // namespace pagedserve
