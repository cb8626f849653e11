// The process-wide half of memory-history recording (ABI: mtiaMemoryRecordHistory and friends): the
// settings every device allocator reads, capturing an allocation's context (C++ return addresses,
// the framework provider's id) outside the allocator locks, releasing contexts nobody refers to any
// more, the user annotations and the per-thread user_metadata. The per-device half, the ring of
// trace entries and the contexts of live blocks, lives in each DeviceAllocator (trace_ring.hpp).
//
// Releasing: dropping the last reference to a context happens under a device lock (a ring entry is
// overwritten, a block freed); a context with a framework id then waits in a list until drain(),
// which every allocator entry point calls after unlocking, hands it to the provider's release. So
// the provider is never called with an allocator lock held.
#pragma once

#include "allocator/history/alloc_context.hpp"
#include "allocator/history/trace_clock.hpp"
#include "allocator/snapshot/model.hpp"

#include <mtia/mtia_memory_history.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace mtia::allocator {

enum class HistoryMode : uint8_t { Off = 0, State = 1, All = 2 };

class HistoryRecorder {
public:
    static constexpr size_t kDefaultEntries = 100000;  // maxEntries 0 (ABI clarification)
    static constexpr uint32_t kMaxFrames = 64;         // C++ frames kept per allocation
    static constexpr size_t kMaxAnnotations = 100000;

    HistoryRecorder() = default;
    ~HistoryRecorder();
    HistoryRecorder(const HistoryRecorder&) = delete;
    HistoryRecorder& operator=(const HistoryRecorder&) = delete;

    // Thread-safe, one relaxed load: what allocators check on every call.
    HistoryMode mode() const noexcept { return mode_.load(std::memory_order_relaxed); }
    bool recording() const noexcept { return mode() != HistoryMode::Off; }
    bool tracing() const noexcept { return mode() == HistoryMode::All; }
    // Ring capacity per device (meaningful while tracing). Thread-safe.
    size_t maxEntries() const noexcept { return maxEntries_.load(std::memory_order_relaxed); }

    // New settings (validated by the caller); the device allocators then apply them to what they
    // hold (DeviceAllocator::applyHistorySettings). Thread-safe.
    void configure(HistoryMode mode, mtiaStackMode stacks, size_t maxEntries) noexcept;

    // The context of an allocation about to be made by the calling thread, or null (no stacks
    // wanted, or nothing captured). Call with no allocator lock held. Thread-safe; throws
    // std::bad_alloc.
    AllocContext* capture();

    // Drops one reference; the last one deletes the context, or queues its framework id for
    // drain(). Thread-safe, non-blocking, legal under an allocator lock.
    void unref(AllocContext* c) noexcept;
    // Releases queued framework ids through the provider. Call with no allocator lock held; cheap
    // when nothing waits. Thread-safe.
    void drain() noexcept {
        if (pendingReleases_.load(std::memory_order_acquire)) drainSlow();
    }

    // Sets (copy) or removes the provider. Throws Error(IllegalState) while ids of the current
    // provider are held (turn recording off first), Error(InvalidValue) for a bad struct.
    // Thread-safe.
    void setProvider(const mtiaContextProvider* provider);
    // Appends id's frames (innermost first) to out through the provider; nothing when none is set.
    // Call with no allocator lock held. Thread-safe (several resolves may run at once).
    void resolve(uint64_t id, std::vector<mem::Frame>& out);

    // ABI mtiaMemoryAnnotate. Thread-safe; throws std::bad_alloc.
    void annotate(std::string_view key, const char* value, int device);
    // The annotations so far, as external_annotations entries. Thread-safe.
    std::vector<mem::Value> annotations() const;
    // The calling thread's user_metadata as a string id (0: ""), and the text of an id.
    // Thread-safe.
    uint32_t threadMetadata() const noexcept;
    // threadMetadata(), read only once some thread annotated (a thread-local read costs a call
    // here).
    uint32_t currentMetadata() const noexcept {
        return annotated_.load(std::memory_order_relaxed) ? threadMetadata() : 0;
    }
    std::string metadataText(uint32_t id) const;

    // Trace entries' time stamps (trace_clock.hpp): cheap to take, converted when a snapshot is
    // taken.
    uint64_t stamp() const noexcept { return clock_.now(); }
    TraceClock::Converter clockConverter() const { return clock_.converter(); }
    // Microseconds since the epoch (CLOCK_REALTIME), the annotations' time_us.
    static int64_t nowUs() noexcept { return TraceClock::realtimeNs() / 1000; }

private:
    void drainSlow() noexcept;

    std::atomic<HistoryMode> mode_{HistoryMode::Off};
    std::atomic<uint8_t> stacks_{0};
    std::atomic<size_t> maxEntries_{kDefaultEntries};

    // The provider: copied under providerMu_ (exclusive to change it, shared to call it).
    mutable std::shared_mutex providerMu_;
    mtiaContextProvider provider_{};
    bool hasProvider_ = false;
    std::atomic<int64_t> heldIds_{0};  // ids captured and not yet released

    std::mutex releaseMu_;
    std::vector<uint64_t> releases_;  // framework ids whose last context is gone
    std::atomic<bool> pendingReleases_{false};

    TraceClock clock_;
    std::atomic<bool> annotated_{false};
    mutable std::mutex annotateMu_;
    std::deque<mem::Value> annotations_;
    std::vector<std::string> metadata_{std::string()};  // user_metadata texts by id; never shrinks
    std::unordered_map<std::string, uint32_t> metadataIds_;
};

}  // namespace mtia::allocator
