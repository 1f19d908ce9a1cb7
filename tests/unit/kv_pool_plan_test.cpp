// The KV pool's size when the config leaves it to memory: sizes as users write them, the auto rule
// (every sequence's full context, capped at a quarter of free memory), an explicit size, and the
// block count taken as given; the bytes a token costs in each KV cache type.
#include <gtest/gtest.h>

#include "config/byte_size.hpp"
#include "kv/kv_cache.hpp"
#include "src/kv_pool_plan.hpp"

namespace pagedserve {
namespace {

TEST(byte_size, units_as_users_write_them) {
  EXPECT_EQ(byte_size_parse("4GiB"), 4ull << 30);
  EXPECT_EQ(byte_size_parse("512mib"), 512ull << 20);
  EXPECT_EQ(byte_size_parse("2GB"), 2'000'000'000ull);
  EXPECT_EQ(byte_size_parse("1.5G"), 3ull << 29);
  EXPECT_EQ(byte_size_parse("10KB"), 10'000ull);
  EXPECT_EQ(byte_size_parse("8KiB"), 8192ull);
  EXPECT_EQ(byte_size_parse("123"), 123ull);
  EXPECT_EQ(byte_size_parse("1 TiB"), 1ull << 40);
  for (const char* bad : {"", "GiB", "-1GiB", "4 GiBs", "four", "1e30GB", "nan"})
    EXPECT_FALSE(byte_size_parse(bad).has_value()) << bad;
  EXPECT_NE(byte_size_parse("lots").error().find("4GiB"), std::string::npos) << "the error shows the form";
}

constexpr std::uint64_t token_bytes = 2560;  // 5 layers x (K+V) x 64 KV dims x 4 B (f32)

// Per token: 5 layers x (K+V) x 2 kv heads x 32 elements, at each type's element size (q8 adds a 4-byte
// scale per row; fp8 has none), so a given memory holds 4x f32's blocks in fp8.
TEST(kv_pool_plan, bytes_per_token_follow_the_cache_type) {
  EXPECT_EQ(kv_cache::bytes_per_token(5, 2, 32, dtype::f32), token_bytes);
  EXPECT_EQ(kv_cache::bytes_per_token(5, 2, 32, dtype::f16), token_bytes / 2);
  EXPECT_EQ(kv_cache::bytes_per_token(5, 2, 32, dtype::i8), token_bytes / 4 + 5 * 2 * 2 * 4);
  for (const char* fp8 : {"fp8", "fp8_e4m3", "fp8_e5m2"})
    EXPECT_EQ(kv_cache::bytes_per_token(5, 2, 32, kv_cache_type(fp8)), token_bytes / 4) << fp8;
  engine_config e;
  e.kv_cache_memory = "1280KiB";  // 32 blocks of f32
  EXPECT_EQ(kv_pool_plan_make(e, token_bytes / 4, 512, 1ull << 30)->blocks,
            4 * kv_pool_plan_make(e, token_bytes, 512, 1ull << 30)->blocks);
  EXPECT_EQ(kv_cache(5, 3, 16, 2, 32, dtype::f8_e5m2).bytes(), 3 * 16 * token_bytes / 4);
}

TEST(kv_pool_plan, explicit_blocks_are_taken_as_given) {
  engine_config e;
  e.kv_blocks = 77;
  auto p = kv_pool_plan_make(e, token_bytes, 512, 1ull << 30);
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->blocks, 77);
}

TEST(kv_pool_plan, a_size_becomes_whole_blocks) {
  engine_config e;
  e.kv_cache_memory = "1MiB";
  auto p = kv_pool_plan_make(e, token_bytes, 512, 1ull << 30);
  ASSERT_TRUE(p.has_value()) << p.error();
  EXPECT_EQ(p->blocks, (1 << 20) / (token_bytes * 16));
  e.kv_cache_memory = "1KiB";
  EXPECT_FALSE(kv_pool_plan_make(e, token_bytes, 512, 1ull << 30).has_value()) << "less than one block";
  e.kv_cache_memory = "many";
  EXPECT_FALSE(kv_pool_plan_make(e, token_bytes, 512, 1ull << 30).has_value());
}

TEST(kv_pool_plan, auto_is_every_full_context_within_a_quarter_of_free_memory) {
  engine_config e;
  e.max_num_seqs = 64;
  auto roomy = kv_pool_plan_make(e, token_bytes, 512, 64ull << 30);
  ASSERT_TRUE(roomy.has_value());
  EXPECT_EQ(roomy->blocks, 64 * 512 / 16);
  const std::uint64_t free_bytes = 40ull << 20;  // a quarter: 10 MiB = 256 blocks of 40 KiB
  auto tight = kv_pool_plan_make(e, token_bytes, 512, free_bytes);
  ASSERT_TRUE(tight.has_value());
  EXPECT_EQ(tight->blocks, static_cast<int>((free_bytes / 4) / (token_bytes * 16)));
  EXPECT_NE(tight->why.find("quarter"), std::string::npos) << tight->why;
  EXPECT_EQ(kv_pool_plan_make(e, token_bytes, 512, 1024)->blocks, 1) << "never an empty pool";
  EXPECT_EQ(kv_pool_plan_make(e, token_bytes, 512, 0)->blocks, 64 * 512 / 16) << "free memory unknown";
}

}  // namespace
}  // namespace pagedserve
