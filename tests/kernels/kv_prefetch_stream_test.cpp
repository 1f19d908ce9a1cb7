// kv_prefetch_stream's accounting: it keeps distance_bytes asked for beyond what the kernels reported
// read, never more than a line past that, and walks every run to its end (runs shorter than a line, as
// q8's scales of a partly filled block, counted by their own bytes, so the distance does not drift),
// also when the runs are listed in parts and those already asked for are dropped in between.
#include <gtest/gtest.h>

#include <cstddef>
#include <numeric>
#include <vector>

#include "kernels/kv_prefetch_stream.hpp"

namespace pagedserve::kernels {
namespace {

TEST(kv_prefetch_stream, stays_the_distance_ahead_of_the_reads_and_ends_with_the_runs) {
  std::vector<std::byte> pool(1 << 20);
  kv_prefetch_stream stream;
  const std::vector<std::uint32_t> sizes = {4096, 64, 40, 1000, 4096, 16, 4096, 8192, 256, 4096};
  std::size_t at = 0, total = 0;
  for (int pass = 0; pass < 2; ++pass) {  // the second pass after restart(), as each range of work items
    stream.restart();
    at = 0, total = 0;
    // Listed in two parts, the first runs asked for dropped in between, as paged_attention lists items.
    const auto list = [&](std::size_t from, std::size_t to) {
      for (std::size_t i = from; i < to; ++i) {
        stream.list({pool.data() + at, sizes[i]});
        at += 8192, total += sizes[i];
      }
    };
    list(0, 5);
    stream.advance(0);
    stream.drop_asked();
    EXPECT_TRUE(stream.wants_more());
    list(5, sizes.size());
    ASSERT_LT(kv_prefetch_stream::distance_bytes, total);
    ASSERT_EQ(stream.listed, total);
    stream.advance(0);
    EXPECT_GE(stream.issued, kv_prefetch_stream::distance_bytes);
    EXPECT_LT(stream.issued, kv_prefetch_stream::distance_bytes + 64);
    std::size_t read = 0;
    while (read < total) {
      const std::size_t step = std::min<std::size_t>(300, total - read);  // the kernels' rows
      stream.advance(step);
      read += step;
      const std::size_t wanted = std::min(total, read + kv_prefetch_stream::distance_bytes);
      ASSERT_GE(stream.issued, wanted);
      ASSERT_LT(stream.issued, wanted + 64);
      ASSERT_LE(stream.issued, total);
    }
    EXPECT_EQ(stream.issued, total);
    EXPECT_EQ(stream.next_run, stream.runs.size());
  }
}

}  // namespace
}  // namespace pagedserve::kernels
