// Owners of runtime objects for the scope of a test: the current device, streams and events. Each
// records the status of its creation (status()) instead of failing, so a test asserts it where it
// matters (ASSERT_OK(s.status())).
#pragma once

#include <mtia/mtia.h>

#include "eventually.hpp"

namespace mtia_test {

// The number of devices (0 when the query fails).
int deviceCount();

// Makes dev the calling thread's current device for the scope.
class DeviceScope {
public:
    explicit DeviceScope(int dev);
    ~DeviceScope();
    DeviceScope(const DeviceScope&) = delete;
    DeviceScope& operator=(const DeviceScope&) = delete;

private:
    int previous_ = 0;
    bool ok_ = false;
};

// Waits (bounded) until the stream has no pending work; the status of the last query.
mtiaError_t drain(mtiaStream_t s, Clock::duration timeout = kHang);

// A stream created on a device. The destructor first waits (bounded) for the stream's work so that
// host functions never outlive what they refer to, then destroys it.
class Stream {
public:
    explicit Stream(int dev = 0, unsigned flags = mtiaStreamDefault, int priority = 0);
    ~Stream();
    Stream(const Stream&) = delete;
    Stream& operator=(const Stream&) = delete;

    mtiaError_t status() const { return status_; }
    mtiaStream_t get() const { return s_; }
    operator mtiaStream_t() const { return s_; }

private:
    mtiaStream_t s_ = nullptr;
    mtiaError_t status_ = mtiaErrorUnknown;
};

// An event created on a device, destroyed with the owner.
class Event {
public:
    explicit Event(unsigned flags = mtiaEventDefault, int dev = 0);
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;

    mtiaError_t status() const { return status_; }
    mtiaEvent_t get() const { return e_; }
    operator mtiaEvent_t() const { return e_; }

private:
    mtiaEvent_t e_ = nullptr;
    mtiaError_t status_ = mtiaErrorUnknown;
};

}  // namespace mtia_test
