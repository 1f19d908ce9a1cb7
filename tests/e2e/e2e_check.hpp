#pragma once
// Checks shared by the end-to-end tests: skip without the model files, assert a client call worked.
#include <gtest/gtest.h>

#include "support/server_process.hpp"
#include "support/test_paths.hpp"

#define E2E_REQUIRE_MODEL()                                     \
  do {                                                          \
    PAGEDSERVE_REQUIRE_DATA(::pagedserve::e2e::model_path());     \
    PAGEDSERVE_REQUIRE_DATA(::pagedserve::e2e::tokenizer_path()); \
  } while (0)

// Asserts that a std::expected-returning client call succeeded, showing its error if not.
#define E2E_ASSERT_OK(expr)                                           \
  do {                                                                \
    const auto e2e_result_ = (expr);                                  \
    ASSERT_TRUE(e2e_result_) << #expr << ": " << e2e_result_.error(); \
  } while (0)
