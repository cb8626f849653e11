#include "status.hpp"

namespace mtia_test {

::testing::AssertionResult statusIs(const char*, const char* callExpr, mtiaError_t want,
                                    mtiaError_t got) {
    if (got == want) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure()
           << callExpr << " returned " << mtiaGetErrorName(got) << " (" << got << "), expected "
           << mtiaGetErrorName(want) << " (" << want
           << ")\n  last error message: " << mtiaGetLastErrorMessage();
}

std::string calledFunction(const char* callExpr) {
    std::string call(callExpr);
    call = call.substr(0, call.find('('));
    while (!call.empty() && call.back() == ' ') call.pop_back();
    return call;
}

::testing::AssertionResult failsSaying(const char*, const char* callExpr, const char*,
                                       mtiaError_t want, mtiaError_t got, const char* needles) {
    ::testing::AssertionResult status = statusIs("", callExpr, want, got);
    if (!status) return status;
    const std::string message = mtiaGetLastErrorMessage();
    const std::string all(needles);
    size_t start = 0;
    while (start <= all.size()) {
        const size_t bar = all.find('|', start);
        const std::string needle =
            all.substr(start, bar == std::string::npos ? std::string::npos : bar - start);
        if (!needle.empty() && message.find(needle) == std::string::npos)
            return ::testing::AssertionFailure()
                   << callExpr << ": the message does not say '" << needle << "': " << message;
        if (bar == std::string::npos) break;
        start = bar + 1;
    }
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult failsNaming(const char*, const char* callExpr, const char*,
                                       mtiaError_t want, mtiaError_t got, const char* arg) {
    ::testing::AssertionResult status = statusIs("", callExpr, want, got);
    if (!status) return status;
    const std::string message = mtiaGetLastErrorMessage();
    const std::string call = calledFunction(callExpr);
    if (message.empty())
        return ::testing::AssertionFailure() << callExpr << ": the last error message is empty";
    if (message.find(call) == std::string::npos)
        return ::testing::AssertionFailure()
               << callExpr << ": the message does not name " << call << ": " << message;
    if (message.find(arg) == std::string::npos)
        return ::testing::AssertionFailure()
               << callExpr << ": the message does not name '" << arg << "': " << message;
    return ::testing::AssertionSuccess();
}

::testing::AssertionResult failsClearly(const char*, const char* callExpr, mtiaError_t want,
                                        mtiaError_t got) {
    ::testing::AssertionResult status = statusIs("", callExpr, want, got);
    if (!status) return status;
    const std::string message = mtiaGetLastErrorMessage();
    const std::string call = calledFunction(callExpr);
    if (message.find(call) == std::string::npos || message.size() < call.size() + 8)
        return ::testing::AssertionFailure() << callExpr << ": the message does not name " << call
                                             << " and say why: '" << message << "'";
    return ::testing::AssertionSuccess();
}

}  // namespace mtia_test
