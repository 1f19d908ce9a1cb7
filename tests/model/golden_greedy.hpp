#pragma once
// Checks a model against run.c's greedy generations of tests/data/golden/stories260K.json: the same
// ids for every case, and the same stop on BOS. Any loader's copy of stories260K must pass it.
#include <gtest/gtest.h>

#include "model/golden_support.hpp"
#include "model/generator.hpp"
#include "pagedserve/kernels.hpp"
#include "pagedserve/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve::test {

inline void expect_golden_greedy_ids(const model& m, const tokenizer& tok) {
  const auto cases = golden_stories260k();
  ASSERT_FALSE(cases.empty());
  for (const auto& c : cases) {
    SCOPED_TRACE("prompt '" + c.prompt + "'");
    sampling_params greedy;
    greedy.temperature = 0;
    greedy.max_tokens = c.n_generated;
    const auto prompt = tok.encode(c.prompt, true);
    const generation g = generate_sequence(m, tok, *kernels::kernel_table_select(), prompt, greedy, 0);
    EXPECT_EQ(std::vector<int>(g.generated.begin(), g.generated.end()), c.generated_ids);
    EXPECT_EQ(g.stopped, c.stopped_on_bos);
  }
}

}  // namespace pagedserve::test
