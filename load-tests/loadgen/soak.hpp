#pragma once
// Soak mode: --soak-minutes of mixed load (random prompt and output lengths as configured, with a
// share of requests cancelled or dropped mid-flight), then the server must come back to rest:
// nothing running or waiting, every KV block free, resident memory grown by at most a bound.
#include "loadgen/options.hpp"
#include "loadgen/workload.hpp"

namespace pagedserve::loadgen {

// Runs the soak, prints its report (and writes --out); returns the exit status: 0 when every
// check passed, 3 when one failed, 1 when the soak could not run.
int soak_run(const options& o, const prompt_builder& prompts);

}  // namespace pagedserve::loadgen
