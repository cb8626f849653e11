#include "runtime/context/ipc_memory.hpp"

#include "core/error.hpp"

#include <cstring>

namespace mtia {

IpcWireHandle readIpcHandle(const char (&bytes)[MTIA_IPC_HANDLE_SIZE], IpcHandleKind kind,
                            const char* argName) {
    IpcWireHandle w;
    std::memcpy(&w, bytes, sizeof w);
    if (w.magic != kIpcHandleMagic)
        fail(mtiaErrorInvalidHandle,
             "{} is not an IPC handle (bad magic 0x{:08x}; zeroed or corrupt)", argName, w.magic);
    if (w.version != kIpcHandleVersion)
        fail(mtiaErrorInvalidHandle, "{} has handle version {}; this runtime reads version {}",
             argName, w.version, kIpcHandleVersion);
    if (w.kind != static_cast<uint16_t>(kind))
        fail(mtiaErrorInvalidHandle, "{} is {}", argName,
             kind == IpcHandleKind::Memory ? "not a memory handle (an event handle?)"
                                           : "not an event handle (a memory handle?)");
    return w;
}

void IpcMemory::countLocked() {
    exportedOrLimbo_.store(exports_.size() + limbo_.size(), std::memory_order_relaxed);
    limboCount_.store(limbo_.size(), std::memory_order_relaxed);
    importCount_.store(imports_.size(), std::memory_order_relaxed);
}

mtiaIpcMemHandle_t IpcMemory::exportAllocation(allocator::DeviceAllocator& alloc, void* ptr) {
    const auto key = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard lock(mu_);
    if (auto it = exports_.find(key); it != exports_.end() && it->second.alloc == &alloc) {
        // Still the same allocation? A free would have removed the entry (interceptFree), so yes.
        return it->second.handle;
    }
    if (limbo_.count(key) != 0)
        fail(mtiaErrorInvalidValue,
             "devPtr {} was freed (its free waits for importers to close it)", ptr);
    const allocator::DeviceAllocator::ExportRange r = alloc.exportRange(ptr, "devPtr");
    Export e{};
    e.alloc = &alloc;
    e.wire.magic = kIpcHandleMagic;
    e.wire.version = kIpcHandleVersion;
    e.wire.kind = static_cast<uint16_t>(IpcHandleKind::Memory);
    e.wire.offset = static_cast<uint32_t>(r.intoRange);
    e.wire.size = r.requested;
    driver_.check(driver_.ops().ipcMemExport(r.mem, r.offset, r.size, &e.wire.driver),
                  "mtiaIpcGetMemHandle");
    std::memcpy(e.handle.reserved, &e.wire, sizeof e.wire);
    exports_.emplace(key, e);
    countLocked();
    return e.handle;
}

bool IpcMemory::interceptFreeSlow(allocator::DeviceAllocator& alloc, void* ptr) {
    const auto key = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard lock(mu_);
    if (limbo_.count(key) != 0)
        fail(mtiaErrorInvalidValue,
             "ptr {} is not a live allocation (already freed; the free waits for IPC importers to "
             "close it)",
             ptr);
    auto it = exports_.find(key);
    if (it == exports_.end() || it->second.alloc != &alloc) return false;
    uint32_t openers = 0;
    const mtiaError_t s = driver_.ops().ipcMemRevoke(&it->second.wire.driver, &openers);
    if (s != mtiaSuccess || openers == 0) {
        exports_.erase(it);
        countLocked();
        return false;
    }
    limbo_.emplace(key, it->second);
    exports_.erase(it);
    countLocked();
    return true;
}

void IpcMemory::collectSlow() {
    std::vector<std::pair<allocator::DeviceAllocator*, void*>> ready;
    {
        std::lock_guard lock(mu_);
        for (auto it = limbo_.begin(); it != limbo_.end();) {
            uint32_t openers = 0;
            const mtiaError_t s = driver_.ops().ipcMemRevoke(&it->second.wire.driver, &openers);
            if (s != mtiaSuccess || openers == 0) {
                ready.emplace_back(it->second.alloc, reinterpret_cast<void*>(it->first));
                it = limbo_.erase(it);
            } else {
                ++it;
            }
        }
        countLocked();
    }
    for (auto& [alloc, ptr] : ready) alloc->free(ptr);
}

void IpcMemory::checkRange(const IpcWireHandle& w, void* va) {
    const mtiaDriverOps& ops = driver_.ops();
    if (ops.ipcMemSize == nullptr) return;  // a 1.4 driver cannot tell (docs/abi.md)
    uint64_t mapped = 0;
    const mtiaError_t s = ops.ipcMemSize(va, &mapped);
    if (s == mtiaSuccess && w.size != 0 && w.offset < mapped && w.size <= mapped - w.offset) return;
    const std::string why =
        s != mtiaSuccess ? std::string(driver_.message())
                         : fmt::format("its range [{}, +{}) lies outside the {} bytes exported",
                                       w.offset, w.size, mapped);
    (void)ops.ipcMemClose(va);  // undo this open
    fail(mtiaErrorInvalidHandle, "handle does not match its export (corrupt or forged): {}", why);
}

void* IpcMemory::open(const mtiaIpcMemHandle_t& handle, int32_t& driverDevice) {
    const IpcWireHandle w = readIpcHandle(handle.reserved, IpcHandleKind::Memory, "handle");
    void* va = nullptr;
    const mtiaError_t s = driver_.ops().ipcMemOpen(&w.driver, 0, &va, &driverDevice);
    if (s == mtiaErrorInvalidValue)
        driver_.raise(
            s, "handle",
            fmt::format("{} (an exporter cannot open its own handle; pass it to another process)",
                        driver_.message()));
    driver_.check(s, "handle");
    checkRange(w, va);
    void* ptr = static_cast<char*>(va) + w.offset;
    std::lock_guard lock(mu_);
    auto [it, added] =
        imports_.try_emplace(reinterpret_cast<uintptr_t>(ptr), Import{va, w.size, driverDevice, 0});
    ++it->second.opens;
    countLocked();
    return ptr;
}

void IpcMemory::close(void* ptr) {
    std::lock_guard lock(mu_);
    auto it = imports_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == imports_.end())
        fail(mtiaErrorInvalidValue,
             "devPtr {} is not an open IPC mapping (not returned by mtiaIpcOpenMemHandle, or "
             "closed)",
             ptr);
    driver_.check(driver_.ops().ipcMemClose(it->second.va), "devPtr");
    if (--it->second.opens == 0) {
        imports_.erase(it);
        countLocked();
    }
}

void IpcMemory::releaseDevice(const allocator::DeviceAllocator* alloc,
                              int32_t driverDevice) noexcept {
    std::lock_guard lock(mu_);
    for (auto* table : {&exports_, &limbo_}) {
        for (auto it = table->begin(); it != table->end();) {
            if (alloc == nullptr || it->second.alloc != alloc) {
                ++it;
                continue;
            }
            uint32_t openers = 0;
            (void)driver_.ops().ipcMemRevoke(&it->second.wire.driver, &openers);
            it = table->erase(it);
        }
    }
    for (auto it = imports_.begin(); it != imports_.end();) {
        if (it->second.driverDevice != driverDevice) {
            ++it;
            continue;
        }
        for (uint32_t i = 0; i < it->second.opens; ++i)
            (void)driver_.ops().ipcMemClose(it->second.va);
        it = imports_.erase(it);
    }
    countLocked();
}

std::optional<IpcMapping> IpcMemory::findImport(const void* ptr) const {
    // As interceptFree: an open that happened before this lookup stored the count before it.
    if (importCount_.load(std::memory_order_relaxed) == 0) [[likely]]
        return std::nullopt;
    const auto p = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard lock(mu_);
    auto it = imports_.upper_bound(p);
    if (it == imports_.begin()) return std::nullopt;
    --it;
    if (p - it->first >= it->second.size) return std::nullopt;
    return IpcMapping{reinterpret_cast<void*>(it->first), it->second.size, it->second.driverDevice};
}

}  // namespace mtia
