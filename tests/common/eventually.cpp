#include "eventually.hpp"

#include <thread>

namespace mtia_test {

bool eventually(const std::function<bool()>& pred, Clock::duration timeout) {
    const auto deadline = Clock::now() + timeout;
    while (!pred()) {
        if (Clock::now() > deadline) return false;
        std::this_thread::sleep_for(1ms);
    }
    return true;
}

}  // namespace mtia_test
