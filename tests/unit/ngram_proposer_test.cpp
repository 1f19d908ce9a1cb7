// N-gram (prompt lookup) proposals: the longest suffix first, the latest earlier match that has
// enough tokens after it, nothing without a match.
#include <gtest/gtest.h>

#include "spec/ngram_proposer.hpp"

namespace pagedserve {
namespace {

using ids = std::vector<token_id>;

TEST(ngram_proposer, proposes_what_followed_the_longest_matching_suffix) {
  // "9 1 2" occurs at 3: what followed is 3 4; "2" alone would match at 1 and propose 7 ...
  const ids t{0, 2, 7, 9, 1, 2, 3, 4, 5, 9, 1, 2};
  EXPECT_EQ(ngram_propose(t, {3, 1}, 2), (ids{3, 4}));
  EXPECT_EQ(ngram_propose(t, {3, 1}, 10), (ids{3, 4, 5, 9, 1, 2}));  // up to the end
  EXPECT_EQ(ngram_propose(t, {1, 1}, 2), (ids{3, 4}));               // "2": latest match with 2 after it
}

TEST(ngram_proposer, nothing_without_a_match_or_budget) {
  const ids t{1, 2, 3, 4};
  EXPECT_TRUE(ngram_propose(t, {3, 1}, 4).empty());
  EXPECT_TRUE(ngram_propose(ids{1, 2, 1, 2}, {3, 1}, 0).empty());
  EXPECT_TRUE(ngram_propose(ids{5}, {3, 1}, 4).empty());
  EXPECT_TRUE(ngram_propose(ids{}, {3, 1}, 4).empty());
  // lookup_min 2: a one-token match does not count.
  EXPECT_TRUE(ngram_propose(ids{7, 8, 1, 9, 1}, {3, 2}, 4).empty());
  EXPECT_EQ(ngram_propose(ids{7, 8, 1, 9, 1}, {3, 1}, 4), (ids{9, 1}));
}

TEST(ngram_proposer, a_run_of_one_token_proposes_more_of_it) {
  EXPECT_EQ(ngram_propose(ids{4, 4, 4, 4, 4}, {2, 1}, 3), (ids{4, 4, 4}));
  EXPECT_EQ(ngram_propose(ids{6, 4, 4}, {2, 1}, 3), (ids{4}));
}

}  // namespace
}  // namespace pagedserve
