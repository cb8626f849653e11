#include "scopes.hpp"

namespace mtia_test {

int deviceCount() {
    int n = 0;
    return mtiaGetDeviceCount(&n) == mtiaSuccess ? n : 0;
}

DeviceScope::DeviceScope(int dev) {
    ok_ = mtiaExchangeDevice(dev, &previous_) == mtiaSuccess;
}

DeviceScope::~DeviceScope() {
    if (ok_) mtiaSetDevice(previous_);
}

mtiaError_t drain(mtiaStream_t s, Clock::duration timeout) {
    mtiaError_t st = mtiaErrorNotReady;
    eventually([&] { return (st = mtiaStreamQuery(s)) != mtiaErrorNotReady; }, timeout);
    return st;
}

Stream::Stream(int dev, unsigned flags, int priority) {
    DeviceScope scope(dev);
    status_ = mtiaStreamCreateWithPriority(&s_, flags, priority);
    if (status_ != mtiaSuccess) s_ = nullptr;
}

Stream::~Stream() {
    if (s_ == nullptr) return;
    drain(s_);
    mtiaStreamDestroy(s_);
}

Event::Event(unsigned flags, int dev) {
    DeviceScope scope(dev);
    status_ = mtiaEventCreateWithFlags(&e_, flags);
    if (status_ != mtiaSuccess) e_ = nullptr;
}

Event::~Event() {
    if (e_ != nullptr) mtiaEventDestroy(e_);
}

}  // namespace mtia_test
