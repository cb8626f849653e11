// The hook by which a stream that is being captured hands its work to the
// capture instead of the device. The capture itself (graph/) sits above the
// streams layer; a stream knows it only through this interface, set while
// the stream takes part in a capture and cleared when the capture ends.
#pragma once

#include <mtia/mtia_driver.h>

#include <cstdint>
#include <memory>

namespace mtia::streams {

class Stream;

// A command as the runtime would have submitted it, with what a recorded copy needs beyond it.
struct CapturedCommand {
    explicit CapturedCommand(const mtiaDrvCommand& c) : cmd(c) {}
    const mtiaDrvCommand& cmd;
    // Kernels: argument sizes (cmd.u.kernel.args[i] points at argSizes[i] bytes), the kernel's name
    // for dumps, and what keeps the kernel loaded while the graph refers to it (its module; null
    // for built-ins).
    uint32_t numArgs = 0;
    const uint32_t* argSizes = nullptr;
    const char* name = nullptr;
    std::shared_ptr<void> keepAlive;
};

// What recording an event on a capturing stream leaves in the event (the capture and the stream's
// position in it), defined by the capture layer.
struct CaptureMark {
    virtual ~CaptureMark() = default;
};

class CaptureLink {
public:
    virtual ~CaptureLink() = default;
    // Records cmd as work of stream in the capture. Throws Error (capture invalidated, out of
    // memory).
    virtual void append(Stream& stream, const CapturedCommand& cmd) = 0;
};

}  // namespace mtia::streams
