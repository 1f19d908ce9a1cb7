// The HTTP session's write queue (net/write_queue.hpp): bytes and pieces counted through a write, and
// the bound that pauses reading over its limit and lets it resume once drained.
#include <gtest/gtest.h>

#include "src/net/write_queue.hpp"

namespace pagedserve::net {
namespace {

TEST(write_queue, counts_queued_and_in_flight_bytes) {
  write_queue q(100, 10);
  q.push("abc");
  q.push("");  // nothing to write: not a piece
  q.push("de");
  EXPECT_EQ(q.bytes(), 5u);
  EXPECT_EQ(q.pieces(), 2u);
  const auto& pieces = q.start_write();
  ASSERT_EQ(pieces.size(), 2u);
  EXPECT_EQ(pieces[0] + pieces[1], "abcde");
  EXPECT_FALSE(q.has_queued());
  q.push("fgh");  // queued behind the write in flight
  EXPECT_EQ(q.bytes(), 8u);
  q.drop_queued();  // a close keeps the bytes Asio is still writing
  EXPECT_EQ(q.bytes(), 5u);
  q.finish_write();
  EXPECT_EQ(q.bytes(), 0u);
  EXPECT_EQ(q.pieces(), 0u);
}

TEST(write_queue, over_either_bound_it_stops_accepting_until_drained) {
  write_queue by_bytes(10, 100);
  by_bytes.push(std::string(10, 'x'));
  EXPECT_TRUE(by_bytes.accepting());  // at the bound
  by_bytes.push("y");
  EXPECT_FALSE(by_bytes.accepting());
  by_bytes.start_write();
  EXPECT_FALSE(by_bytes.accepting());  // bytes in flight still count
  by_bytes.finish_write();
  EXPECT_TRUE(by_bytes.accepting());

  write_queue by_pieces(1 << 20, 3);
  for (int i = 0; i < 4; ++i) by_pieces.push("z");
  EXPECT_FALSE(by_pieces.accepting());
  by_pieces.start_write();
  by_pieces.finish_write();
  EXPECT_TRUE(by_pieces.accepting());
}

}  // namespace
}  // namespace pagedserve::net
