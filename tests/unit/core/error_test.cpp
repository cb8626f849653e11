#include "core/api_guard.hpp"
#include "core/error.hpp"
#include "core/last_error.hpp"

#include <gtest/gtest.h>

#include <string>

namespace mtia {
namespace {

TEST(CoreErrors, EveryCodeHasANameAndText) {
    const mtiaError_t codes[] = {mtiaSuccess,
                                 mtiaErrorInvalidValue,
                                 mtiaErrorMemoryAllocation,
                                 mtiaErrorNoDevice,
                                 mtiaErrorInvalidHandle,
                                 mtiaErrorNotReady,
                                 mtiaErrorLaunchFailure,
                                 mtiaErrorStreamCaptureWrongThread,
                                 mtiaErrorDriver,
                                 mtiaErrorUnknown};
    for (mtiaError_t c : codes) {
        EXPECT_STRNE(errorName(c), "unrecognized error code") << c;
        EXPECT_STRNE(errorString(c), "unrecognized error code") << c;
    }
    EXPECT_STREQ(errorName(mtiaErrorInvalidDevice), "mtiaErrorInvalidDevice");
    EXPECT_STREQ(errorName(static_cast<mtiaError_t>(12345)), "unrecognized error code");
}

TEST(CoreErrors, GuardTranslatesErrorsAndNamesTheCall) {
    mtiaError_t st = apiCall("mtiaThing", [] { fail(mtiaErrorInvalidValue, "size {} is odd", 3); });
    EXPECT_EQ(st, mtiaErrorInvalidValue);
    EXPECT_EQ(std::string(lastErrorMessage()), "mtiaThing: size 3 is odd (mtiaErrorInvalidValue)");
}

TEST(CoreErrors, GuardPassesReturnedStatusAndSuccess) {
    EXPECT_EQ(apiCall("f", [] {}), mtiaSuccess);
    EXPECT_EQ(apiCall("f", [] { return mtiaErrorNotReady; }), mtiaErrorNotReady);
}

TEST(CoreErrors, NotReadyIsAStatusAndKeepsTheMessage) {
    apiCall("first", [] { fail(mtiaErrorInvalidHandle, "bad"); });
    const std::string before = lastErrorMessage();
    EXPECT_EQ(apiCall("second", [] { fail(mtiaErrorNotReady, "pending"); }), mtiaErrorNotReady);
    EXPECT_EQ(std::string(lastErrorMessage()), before);
}

TEST(CoreErrors, GuardCatchesForeignExceptions) {
    EXPECT_EQ(apiCall("f", [] { throw std::bad_alloc(); }), mtiaErrorMemoryAllocation);
    EXPECT_NE(std::string(lastErrorMessage()).find("host memory"), std::string::npos);
    EXPECT_EQ(apiCall("f", [] { throw std::logic_error("boom"); }), mtiaErrorUnknown);
    EXPECT_NE(std::string(lastErrorMessage()).find("boom"), std::string::npos);
    EXPECT_EQ(apiCall("f", [] { throw 42; }), mtiaErrorUnknown);
}

TEST(CoreErrors, CallsFromDeviceWorkAreNotPermitted) {
    bool ran = false;
    {
        DeviceCallbackScope scope;
        EXPECT_EQ(apiCall("mtiaMalloc", [&] { ran = true; }), mtiaErrorNotPermitted);
    }
    EXPECT_FALSE(ran);
    EXPECT_EQ(apiCall("mtiaMalloc", [&] { ran = true; }), mtiaSuccess);
    EXPECT_TRUE(ran);
}

TEST(CoreErrors, MessagesAreThreadLocal) {
    apiCall("main", [] { fail(mtiaErrorInvalidValue, "main thread"); });
    std::string other;
    std::thread t([&] { other = lastErrorMessage(); });
    t.join();
    EXPECT_EQ(other, "");
    EXPECT_NE(std::string(lastErrorMessage()).find("main thread"), std::string::npos);
}

}  // namespace
}  // namespace mtia
