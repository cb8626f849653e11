// The bytes of the shared registry object (layout version 1). Everything is
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

inline constexpr uint32_t kLayoutVersion = 1;
inline constexpr uint64_t kMagic = 0x3147455241495444ull;  // "DTIAREG1" read as little-endian bytes
inline constexpr uint32_t kMaxDevices = 64;                 // the simulator's own limit
inline constexpr uint32_t kDefaultSlots = 128;  // 540 KiB of /dev/shm per machine
inline constexpr uint32_t kMaxSlots = 4096;
inline constexpr uint32_t kHeaderBytes = 4096;
inline constexpr uint32_t kCommBytes = 32;
inline constexpr uint32_t kMachineBytes = 160;

enum class ObjectState : uint32_t { Empty = 0, Initializing = 1, Ready = 2, Poisoned = 3 };
enum class SlotState : uint32_t { Free = 0, Active = 1 };

// One process's figures for one device; only the owner writes them.
struct alignas(64) SlotDevice {
  std::atomic<uint64_t> reserved;       // device memory the process holds (what capacity counts)
  std::atomic<uint64_t> allocated;      // bytes handed out by the process's allocator
  std::atomic<uint64_t> peakReserved;
  std::atomic<uint64_t> peakAllocated;
  std::atomic<uint64_t> busyNs;         // engine time spent on the process's work
  std::atomic<uint64_t> spare[3];
};

struct alignas(64) Slot {
  std::atomic<uint32_t> seq;    // seqlock over the identity fields: odd while the owner writes them
  std::atomic<uint32_t> state;  // SlotState
  uint32_t pid;                 // in the owner's own pid namespace
  uint32_t reserved0;
  uint64_t pidnsInode;          // identity of that namespace (/proc/self/ns/pid)
  uint64_t startTime;           // clock ticks after boot (/proc/self/stat field 22): tells pid reuse apart
  uint64_t registeredNs;        // CLOCK_REALTIME
  char comm[kCommBytes];        // NUL-terminated process name
  std::atomic<uint64_t> request;  // written by a tool (op << 32 | token); the one field others write
  std::atomic<uint64_t> ack;      // the owner's answer: the token it served
  uint8_t reserved1[128 - 88];
  SlotDevice devices[kMaxDevices];
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
static_assert(std::atomic<uint64_t>::is_always_lock_free && std::atomic<uint32_t>::is_always_lock_free);
static_assert(sizeof(SlotDevice) == 64);
static_assert(offsetof(Slot, devices) == 128);
static_assert(sizeof(Slot) == 128 + 64 * kMaxDevices);
static_assert(sizeof(Header) <= kHeaderBytes);

constexpr uint64_t objectBytes(uint32_t slots) { return kHeaderBytes + uint64_t{slots} * sizeof(Slot); }

// Byte 0 of the lock file guards creation; byte 1 + i is the liveness lock (OFD) of slot i;
// byte 1 + kMaxSlots + i a classic POSIX lock of the same owner, only there because F_GETLK
// translates its holder's pid into the reader's pid namespace (OFD locks report no pid).
constexpr off_t creationLockByte() { return 0; }
constexpr off_t slotLockByte(uint32_t slot) { return 1 + static_cast<off_t>(slot); }
constexpr off_t pidLockByte(uint32_t slot) { return 1 + static_cast<off_t>(kMaxSlots) + static_cast<off_t>(slot); }

}  // namespace mtia::registry
