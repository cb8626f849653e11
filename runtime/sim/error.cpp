#include "error.hpp"

namespace mtia::sim {
namespace {
thread_local std::string tLastError;
}

mtiaError_t fail(mtiaError_t code, std::string message) {
  tLastError = std::move(message);
  return code;
}

const char* lastErrorMessage() noexcept { return tLastError.c_str(); }

}  // namespace mtia::sim
