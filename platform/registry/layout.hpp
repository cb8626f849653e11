// The bytes of the shared registry object (layout version 2: version 1 plus
// each slot's IPC tables). Everything is
// fixed-size and position-independent: no pointers, no Boost types, no
// segment manager. A process writes only its own slot (with atomics);
// the one shared lock is the robust admission mutex in the header.
//
// Changing any struct here means a new kLayoutVersion: the version is part of
// the object's name, so runtimes of different layouts never map each other.
#pragma once

#include <pthread.h>
#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace mtia::registry {

inline constexpr uint32_t kLayoutVersion = 2;
inline constexpr uint64_t kMagic = 0x3147455241495444ull;  // "DTIAREG1" read as little-endian bytes
inline constexpr uint32_t kMaxDevices = 64;                // the simulator's own limit
inline constexpr uint32_t kDefaultSlots = 128;             // 2.3 MiB of /dev/shm per machine
inline constexpr uint32_t kMaxSlots = 4096;
inline constexpr uint32_t kHeaderBytes = 4096;
inline constexpr uint32_t kCommBytes = 32;
inline constexpr uint32_t kMachineBytes = 160;

// IPC tables of one slot: bounded, so a slot keeps a fixed size; a full table is an error of the
// call that needed a record.
inline constexpr uint32_t kIpcExports = 64;
inline constexpr uint32_t kIpcImports = 64;
inline constexpr uint32_t kIpcEvents = 64;

enum class ObjectState : uint32_t { Empty = 0, Initializing = 1, Ready = 2, Poisoned = 3 };
enum class SlotState : uint32_t { Free = 0, Active = 1 };

// One process's figures for one device; only the owner writes them.
struct alignas(64) SlotDevice {
    std::atomic<uint64_t> reserved;   // device memory the process holds (what capacity counts)
    std::atomic<uint64_t> allocated;  // bytes handed out by the process's allocator
    std::atomic<uint64_t> peakReserved;
    std::atomic<uint64_t> peakAllocated;
    std::atomic<uint64_t> busyNs;        // engine time spent on the process's work
    std::atomic<uint64_t> busyMarks[2];  // utilisation checkpoints, [1] the newer (busy_window.hpp)
    std::atomic<uint64_t> spare;
};

enum class ExportState : uint32_t { Free = 0, Live = 1, Revoked = 2 };
enum class EventState : uint32_t { Free = 0, Live = 1, Dead = 2 };

// Device memory this process exported (mtiaIpcGetMemHandle); only the owner writes it. generation
// is unique per registration and tells a reused record from the one a handle names.
struct alignas(64) ExportRecord {
    std::atomic<uint32_t> state;  // ExportState: Revoked = freed by the exporter, no new opens
    std::atomic<uint32_t> device;
    std::atomic<uint64_t> generation;
    std::atomic<uint64_t> fileOffset;  // the range of the device's memory file, granule-aligned
    std::atomic<uint64_t> size;
    std::atomic<uint64_t> fileDev;  // st_dev and st_ino of the memory file, checked by importers
    std::atomic<uint64_t> fileIno;
    std::atomic<int32_t> fd;  // its descriptor number in the exporter
    uint32_t reserved0;
    uint64_t reserved1;
};

// An export of another process this process has open; only the owner writes it. opens 0: free.
struct alignas(32) ImportRecord {
    std::atomic<uint32_t> opens;
    std::atomic<uint32_t> exporterSlot;
    std::atomic<uint32_t> exportIndex;
    uint32_t reserved0;
    std::atomic<uint64_t> exporterRegistration;  // the exporter slot's registeredNs
    std::atomic<uint64_t> generation;
};

inline constexpr uint32_t kRecentTickets = 8;

// An interprocess event this process exported: its record and completion counters, which importers
// read and wait on (a futex word: non-private, the page is shared). Record n is complete when
// completed >= n, or when recent[n % kRecentTickets] == n (it completed before an earlier one).
struct alignas(64) EventRecord {
    std::atomic<uint32_t> state;  // EventState: Dead = destroyed by the exporter
    std::atomic<uint32_t> wake;   // futex word: bumped on every completion and on death
    std::atomic<uint64_t> generation;
    std::atomic<uint64_t> recorded;   // records made so far (the latest record's number)
    std::atomic<uint64_t> completed;  // every record up to this one completed
    std::atomic<uint32_t> device;
    uint32_t reserved0;
    uint64_t reserved[3];
    std::atomic<uint64_t>
        recent[kRecentTickets];  // the latest completed numbers, by number modulo 8
};

struct alignas(64) Slot {
    std::atomic<uint32_t> seq;  // seqlock over the identity fields: odd while the owner writes them
    std::atomic<uint32_t> state;  // SlotState
    uint32_t pid;                 // in the owner's own pid namespace
    uint32_t reserved0;
    uint64_t pidnsInode;  // identity of that namespace (/proc/self/ns/pid)
    uint64_t startTime;  // clock ticks after boot (/proc/self/stat field 22): tells pid reuse apart
    uint64_t registeredNs;  // CLOCK_REALTIME
    char comm[kCommBytes];  // NUL-terminated process name
    std::atomic<uint64_t>
        request;                // written by a tool (op << 32 | token); the one field others write
    std::atomic<uint64_t> ack;  // the owner's answer: the token it served
    uint8_t reserved1[128 - 88];
    SlotDevice devices[kMaxDevices];
    ExportRecord exports[kIpcExports];
    ImportRecord imports[kIpcImports];
    EventRecord events[kIpcEvents];
};

struct Header {
    uint64_t magic;
    uint32_t layoutVersion;
    uint32_t headerBytes;
    uint32_t slotBytes;
    uint32_t maxDevices;
    uint32_t deviceCount;
    uint32_t maxSlots;
    uint64_t totalBytes;
    uint64_t createdNs;
    uint32_t creatorPid;
    std::atomic<uint32_t> state;  // ObjectState; Ready is stored last, with release
    char machine[kMachineBytes];  // the configuration this registry stands for, for listings
    uint64_t capacity[kMaxDevices];
    alignas(64) pthread_mutex_t admit;  // robust, process-shared: serialises capacity reservations
};

static_assert(std::is_standard_layout_v<Slot> && std::is_standard_layout_v<Header>);
static_assert(std::atomic<uint64_t>::is_always_lock_free &&
              std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(SlotDevice) == 64);
static_assert(offsetof(Slot, devices) == 128);
static_assert(sizeof(ExportRecord) == 64 && sizeof(ImportRecord) == 32 &&
              sizeof(EventRecord) == 128);
static_assert(offsetof(Slot, exports) == 128 + 64 * kMaxDevices);
static_assert(sizeof(Slot) ==
              128 + 64 * kMaxDevices + 64 * kIpcExports + 32 * kIpcImports + 128 * kIpcEvents);
static_assert(std::is_standard_layout_v<ExportRecord> && std::is_standard_layout_v<ImportRecord> &&
              std::is_standard_layout_v<EventRecord>);
static_assert(sizeof(Header) <= kHeaderBytes);

constexpr uint64_t objectBytes(uint32_t slots) {
    return kHeaderBytes + uint64_t{slots} * sizeof(Slot);
}

// Byte 0 of the lock file guards creation; byte 1 + i is the liveness lock (OFD) of slot i;
// byte 1 + kMaxSlots + i a classic POSIX lock of the same owner, only there because F_GETLK
// translates its holder's pid into the reader's pid namespace (OFD locks report no pid).
constexpr off_t creationLockByte() {
    return 0;
}
constexpr off_t slotLockByte(uint32_t slot) {
    return 1 + static_cast<off_t>(slot);
}
constexpr off_t pidLockByte(uint32_t slot) {
    return 1 + static_cast<off_t>(kMaxSlots) + static_cast<off_t>(slot);
}

}  // namespace mtia::registry
