#include "host_launch.hpp"

#include <memory>
#include <utility>

namespace mtia_test {

mtiaError_t launchHost(mtiaStream_t s, std::function<void()> fn) {
    auto* owned = new std::function<void()>(std::move(fn));
    const mtiaError_t st = mtiaLaunchHostFunc(
        s,
        [](void* user) {
            std::unique_ptr<std::function<void()>> f(static_cast<std::function<void()>*>(user));
            (*f)();
        },
        owned);
    if (st != mtiaSuccess) delete owned;
    return st;
}

}  // namespace mtia_test
