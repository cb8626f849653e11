#include "core/error.hpp"
#include "core/options.hpp"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace mtia {
namespace {

EnvLookup fakeEnv(std::map<std::string, std::string> vars) {
    return [vars](std::string_view name) -> std::optional<std::string> {
        auto it = vars.find(std::string(name));
        if (it == vars.end()) return std::nullopt;
        return it->second;
    };
}

// The Error's message, or "" when no Error was thrown.
template <typename F>
std::string errorOf(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        EXPECT_EQ(e.code(), mtiaErrorInvalidValue);
        return e.what();
    }
    return "";
}

TEST(CoreOptions, Defaults) {
    RuntimeOptions o = readRuntimeOptions(fakeEnv({}));
    EXPECT_EQ(o.logLevel, LogLevel::Warn);
    EXPECT_EQ(o.driver, "");
    EXPECT_FALSE(o.visibleDevices);
}

TEST(CoreOptions, ReadsEverySetting) {
    RuntimeOptions o = readRuntimeOptions(fakeEnv({{"MTIA_LOG_LEVEL", "debug"},
                                                   {"MTIA_DRIVER", "/x/d.so"},
                                                   {"MTIA_VISIBLE_DEVICES", "1,0"}}));
    EXPECT_EQ(o.logLevel, LogLevel::Debug);
    EXPECT_EQ(o.driver, "/x/d.so");
    ASSERT_TRUE(o.visibleDevices);
    EXPECT_EQ(*o.visibleDevices, (std::vector<int>{1, 0}));
}

TEST(CoreOptions, EmptyVisibleDevicesHidesAll) {
    RuntimeOptions o = readRuntimeOptions(fakeEnv({{"MTIA_VISIBLE_DEVICES", ""}}));
    ASSERT_TRUE(o.visibleDevices);
    EXPECT_TRUE(o.visibleDevices->empty());
}

TEST(CoreOptions, BadValuesNameTheVariableAndWhatIsAccepted) {
    std::string m = errorOf([] { readRuntimeOptions(fakeEnv({{"MTIA_LOG_LEVEL", "loud"}})); });
    EXPECT_NE(m.find("MTIA_LOG_LEVEL='loud'"), std::string::npos) << m;
    EXPECT_NE(m.find("trace, debug, info, warn, error, off"), std::string::npos) << m;
    for (const char* bad : {"a", "1,,2", "-1", "1,1", "0,", "2x", "99999"}) {
        m = errorOf([&] { readRuntimeOptions(fakeEnv({{"MTIA_VISIBLE_DEVICES", bad}})); });
        EXPECT_NE(m.find("MTIA_VISIBLE_DEVICES"), std::string::npos) << bad << ": " << m;
    }
}

TEST(CoreOptions, ParseIntBounds) {
    EXPECT_EQ(parseInt("K", "42", 0, 100), 42);
    EXPECT_EQ(parseInt("K", "-3", -5, 5), -3);
    EXPECT_NE(errorOf([] { parseInt("K", "101", 0, 100); }).find("0 to 100"), std::string::npos);
    EXPECT_NE(errorOf([] { parseInt("K", "", 0, 100); }), "");
    EXPECT_NE(errorOf([] { parseInt("K", "99999999999999999999999", 0, 100); }), "");
    EXPECT_NE(errorOf([] { parseInt("K", " 1", 0, 100); }), "");
}

}  // namespace
}  // namespace mtia
