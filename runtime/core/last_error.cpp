#include "runtime/core/last_error.hpp"

#include <utility>

namespace mtia {
namespace {
thread_local std::string tlsMessage;
}

void setLastErrorMessage(std::string message) noexcept { tlsMessage = std::move(message); }

const char* lastErrorMessage() noexcept { return tlsMessage.c_str(); }

}  // namespace mtia
