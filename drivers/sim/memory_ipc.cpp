// A device's memory shared with other processes: exports name a range of the
// device's memory file; imports map a range of another process's memory file
// (reopened through /proc) into this process's range of the same device.
#include "memory.hpp"

#include "config.hpp"
#include "error.hpp"

#include <sys/mman.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>

namespace mtia::sim {

mtiaError_t DeviceMemory::exportRange(const PhysicalMemory& mem, uint64_t offset, uint64_t size,
                                      registry::ExportInfo& info) {
    if (size == 0 || size % kGranularity != 0 || offset % kGranularity != 0 || offset > mem.size ||
        size > mem.size - offset) {
        return reportErrorf(
            mtiaErrorInvalidValue,
            "ipcMemExport: [offset {}, +{}) is not a granular range of the memory's {} bytes",
            offset, size, mem.size);
    }
    std::lock_guard lock(mu_);
    struct stat st {};
    if (memfd_ < 0 || fstat(memfd_, &st) != 0) {
        return reportErrorf(mtiaErrorUnknown,
                            "ipcMemExport: device {}'s memory file cannot be described: {}",
                            device_, std::strerror(errno));
    }
    info.device = static_cast<uint32_t>(device_);
    info.fileOffset = mem.fileOffset + offset;
    info.size = size;
    info.fileDev = static_cast<uint64_t>(st.st_dev);
    info.fileIno = static_cast<uint64_t>(st.st_ino);
    info.fd = memfd_;
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::mapImport(int fd, uint64_t fileOffset, uint64_t size, void** va) {
    std::lock_guard lock(mu_);
    if (mtiaError_t err = ensureReservedLocked(); err != mtiaSuccess) return err;
    auto mem = std::make_unique<PhysicalMemory>();
    const std::optional<uint64_t> start = va_.allocate(size, kGranularity);
    if (!start) {
        return reportErrorf(mtiaErrorMemoryAllocation,
                            "ipcMemOpen: device {} has no free address range of {} bytes ({} free)",
                            device_, size, va_.freeBytes());
    }
    void* at = reinterpret_cast<void*>(*start);
    if (mmap(at, size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd,
             static_cast<off_t>(fileOffset)) == MAP_FAILED) {
        const int err = errno;
        va_.release(*start, size);
        return reportErrorf(mtiaErrorMemoryAllocation,
                            "ipcMemOpen: mapping {} bytes of the exporter's memory failed: {}",
                            size, std::strerror(err));
    }
    mem->owner = this;
    mem->fileOffset = fileOffset;
    mem->size = size;
    mem->mappings = 1;
    {
        std::unique_lock mapLock(mappingsMu_);
        mappings_.emplace(*start, Mapping{size, mem.get()});
    }
    imports_.emplace(*start, std::move(mem));
    *va = at;
    return mtiaSuccess;
}

mtiaError_t DeviceMemory::unmapImport(void* va) {
    const uintptr_t start = reinterpret_cast<uintptr_t>(va);
    std::lock_guard lock(mu_);
    auto it = imports_.find(start);
    if (it == imports_.end())
        return reportErrorf(mtiaErrorInvalidValue, "ipcMemClose: {} is not an import of device {}",
                            va, device_);
    const uint64_t size = it->second->size;
    {
        std::unique_lock mapLock(mappingsMu_);
        mappings_.erase(start);
    }
    imports_.erase(it);
    // Anonymous PROT_NONE over the range drops the exporter's pages and keeps the addresses
    // reserved.
    if (mmap(va, size, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED, -1, 0) ==
        MAP_FAILED) {
        return reportErrorf(mtiaErrorDriver,
                            "ipcMemClose: restoring the reservation at {} failed: {}", va,
                            std::strerror(errno));
    }
    va_.release(start, size);
    return mtiaSuccess;
}

}  // namespace mtia::sim
