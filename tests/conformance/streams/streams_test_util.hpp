// The stream/event conformance tests' view of the shared test helpers (tests/common): status
// assertions, scopes, latches, calls that might hang, device buffers and process measurements.
// Their EXPECT_FAILS(want, call, arg) requires the last-error message to name the called function
// and the argument. Uses only the public header.
#pragma once

#include <gtest/gtest.h>
#include <mtia/mtia.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "common/async_call.hpp"
#include "common/eventually.hpp"
#include "common/host_launch.hpp"
#include "common/kernels.hpp"
#include "common/latch.hpp"
#include "common/measure.hpp"
#include "common/memory.hpp"
#include "common/scopes.hpp"
#include "common/status.hpp"

// EXPECT_FAILS(mtiaErrorInvalidValue, mtiaStreamCreate(nullptr), "stream")
#define EXPECT_FAILS(want, call, arg) EXPECT_FAILS_NAMING(want, call, arg)
