// What the memory history remembers about one allocation: the C++ return
// addresses captured when it was made and the framework's opaque context id.
// Reference counted: the block, the segment it created and the trace entries
// that mention it share one; the last reference gone, the framework's id is
// released (history_recorder.hpp) and the context deleted.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <new>

namespace mtia::allocator {

class AllocContext {
public:
    // A context with room for frames C++ frames (filled by the caller) and one reference. Throws
    // std::bad_alloc.
    static AllocContext* make(uint32_t frames, uint64_t frameworkId) {
        void* p = ::operator new(sizeof(AllocContext) + frames * sizeof(void*));
        return new (p) AllocContext(frames, frameworkId);
    }

    void ref() noexcept { refs_.fetch_add(1, std::memory_order_relaxed); }
    // True when this dropped the last reference (the caller then disposes of it).
    bool unref() noexcept { return refs_.fetch_sub(1, std::memory_order_acq_rel) == 1; }
    static void destroy(AllocContext* c) noexcept {
        c->~AllocContext();
        ::operator delete(c);
    }

    void** frames() noexcept { return reinterpret_cast<void**>(this + 1); }
    void* const* frames() const noexcept { return reinterpret_cast<void* const*>(this + 1); }
    uint32_t frameCount() const noexcept { return frameCount_; }
    void setFrameCount(uint32_t n) noexcept { frameCount_ = n; }
    uint64_t frameworkId() const noexcept { return frameworkId_; }

private:
    AllocContext(uint32_t frames, uint64_t frameworkId)
        : frameCount_(frames), frameworkId_(frameworkId) {}
    ~AllocContext() = default;

    std::atomic<uint32_t> refs_{1};
    uint32_t frameCount_;
    uint64_t frameworkId_;  // 0: none
};

static_assert(sizeof(AllocContext) % alignof(void*) == 0);

}  // namespace mtia::allocator
