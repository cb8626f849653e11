#include "status.hpp"

namespace mtia::registry {

const char* codeName(Code code) {
    switch (code) {
    case Code::Ok: return "ok";
    case Code::InvalidArgument: return "invalid argument";
    case Code::Permission: return "permission denied";
    case Code::NotFound: return "not found";
    case Code::Unavailable: return "unavailable";
    case Code::NoSpace: return "no space";
    case Code::SlotsExhausted: return "process slots exhausted";
    case Code::OutOfCapacity: return "out of capacity";
    case Code::Timeout: return "timeout";
    case Code::Busy: return "busy";
    case Code::System: return "system error";
    case Code::Stale: return "stale";
    case Code::SelfImport: return "exported by this process";
    case Code::TableFull: return "IPC table full";
    }
    return "unknown";
}

}  // namespace mtia::registry
