// Status assertions for tests of the public ABI: a failure prints the error's name and number and
// the thread's last-error message, which usually says why.
//
// EXPECT_STATUS / ASSERT_STATUS (want, call), EXPECT_OK / ASSERT_OK (call), and three checks of a
// failure's message, for the suites' different conventions:
//   EXPECT_FAILS_SAYING(want, call, "a|b")  the message holds each '|'-separated needle
//   EXPECT_FAILS_NAMING(want, call, "arg")  the message names the called function and the argument
//   EXPECT_FAILS_CLEARLY(want, call)        the message names the called function and says more
#pragma once

#include <gtest/gtest.h>
#include <mtia/mtia.h>

#include <string>

namespace mtia_test {

::testing::AssertionResult statusIs(const char* wantExpr, const char* callExpr, mtiaError_t want,
                                    mtiaError_t got);

// The function a call expression calls: "mtiaStreamCreate" for "mtiaStreamCreate (nullptr)".
std::string calledFunction(const char* callExpr);

::testing::AssertionResult failsSaying(const char* wantExpr, const char* callExpr,
                                       const char* needlesExpr, mtiaError_t want, mtiaError_t got,
                                       const char* needles);
::testing::AssertionResult failsNaming(const char* wantExpr, const char* callExpr,
                                       const char* argExpr, mtiaError_t want, mtiaError_t got,
                                       const char* arg);
::testing::AssertionResult failsClearly(const char* wantExpr, const char* callExpr,
                                        mtiaError_t want, mtiaError_t got);

}  // namespace mtia_test

#define EXPECT_STATUS(want, call) EXPECT_PRED_FORMAT2(::mtia_test::statusIs, want, call)
#define ASSERT_STATUS(want, call) ASSERT_PRED_FORMAT2(::mtia_test::statusIs, want, call)
#define EXPECT_OK(call) EXPECT_STATUS(mtiaSuccess, call)
#define ASSERT_OK(call) ASSERT_STATUS(mtiaSuccess, call)

#define EXPECT_FAILS_SAYING(want, call, needles)                                                   \
    EXPECT_PRED_FORMAT3(::mtia_test::failsSaying, want, call, needles)
#define EXPECT_FAILS_NAMING(want, call, arg)                                                       \
    EXPECT_PRED_FORMAT3(::mtia_test::failsNaming, want, call, arg)
#define EXPECT_FAILS_CLEARLY(want, call) EXPECT_PRED_FORMAT2(::mtia_test::failsClearly, want, call)
