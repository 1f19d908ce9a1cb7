#pragma once
// What the server serves when no model is configured: "demo-random", a tiny Llama (the stories260K
// shape) with seeded random weights and a byte-level llama2.c vocabulary, built in memory. It runs the
// whole real path (tokenizer, paged KV, forward, sampling) but writes gibberish; point --model and
// --tokenizer at a real checkpoint for real text.
#include <memory>
#include <utility>

#include "pagedserve/model.hpp"
#include "tokenizer/tokenizer.hpp"

namespace pagedserve {

std::pair<std::shared_ptr<const model>, std::unique_ptr<tokenizer>> demo_model_make();

}  // namespace pagedserve
