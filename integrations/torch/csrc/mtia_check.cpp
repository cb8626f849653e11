#include "mtia_check.h"

#include <c10/util/Exception.h>

#include <string>

namespace torch_mtia {

const char* describeFailure(mtiaError_t status, const char* call) {
    thread_local std::string message;
    message = std::string(call) + " failed: " + mtiaGetErrorName(status) + ": " +
              mtiaGetLastErrorMessage();
    return message.c_str();
}

void checkMtia(mtiaError_t status, const char* call) {
    if (status == mtiaSuccess) return;
    const std::string message = describeFailure(status, call);
    if (status == mtiaErrorMemoryAllocation) {
        TORCH_CHECK_WITH(OutOfMemoryError, false, message);
    }
    TORCH_CHECK(false, message);
}

}  // namespace torch_mtia
