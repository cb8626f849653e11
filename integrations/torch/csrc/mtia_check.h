// Turns a failed C ABI call into a PyTorch error (c10::Error, which Python sees as RuntimeError;
// c10::OutOfMemoryError for mtiaErrorMemoryAllocation, torch.cuda.OutOfMemoryError in Python,
// itself a RuntimeError). The message names the call, the status and the runtime's own message.
#pragma once

#include <mtia/mtia.h>

namespace torch_mtia {

// Throws unless status is mtiaSuccess.
void checkMtia(mtiaError_t status, const char* call);

// The message checkMtia would throw for status (for callers that must not throw).
const char* describeFailure(mtiaError_t status, const char* call);

}  // namespace torch_mtia

#define MTIA_CHECK(expr) ::torch_mtia::checkMtia((expr), #expr)
