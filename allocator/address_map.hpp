// Live blocks by address: an open-addressing hash table (linear probing,
// power-of-two capacity, deletion by backward shift) with no allocation per
// entry, because every mtiaMalloc inserts and every mtiaFree looks up and
// erases. Not thread-safe: the device allocator's lock guards it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

namespace mtia::allocator {

struct Block;

class AddressMap {
public:
    AddressMap() { rehash(kInitialCapacity); }

    // address must not be in the map and must not be 0. Throws std::bad_alloc (map unchanged).
    void insert(uintptr_t address, Block* b) {
        if ((size_ + 1) * 4 > capacity_ * 3) rehash(capacity_ * 2);
        place(address, b);
        ++size_;
    }
    Block* find(uintptr_t address) const {
        for (size_t i = slot(address);; i = (i + 1) & mask()) {
            if (slots_[i].address == address) return slots_[i].block;
            if (slots_[i].address == 0) return nullptr;
        }
    }
    // Removes address; returns its block, or null when it was not there.
    Block* erase(uintptr_t address) {
        if (address == 0) return nullptr;  // 0 marks empty slots
        size_t i = slot(address);
        for (;; i = (i + 1) & mask()) {
            if (slots_[i].address == address) break;
            if (slots_[i].address == 0) return nullptr;
        }
        Block* found = slots_[i].block;
        // Backward shift: move later entries of the probe run into the hole when their home slot
        // allows.
        for (size_t j = (i + 1) & mask();; j = (j + 1) & mask()) {
            if (slots_[j].address == 0) break;
            const size_t home = slot(slots_[j].address);
            if (((j - home) & mask()) >= ((j - i) & mask())) {
                slots_[i] = slots_[j];
                i = j;
            }
        }
        slots_[i] = Slot{};
        --size_;
        return found;
    }
    size_t size() const { return size_; }
    // Forgets every entry (device reset).
    void clear() {
        for (size_t i = 0; i < capacity_; ++i) slots_[i] = Slot{};
        size_ = 0;
    }

private:
    struct Slot {
        uintptr_t address = 0;
        Block* block = nullptr;
    };
    static constexpr size_t kInitialCapacity = 1024;

    size_t mask() const { return capacity_ - 1; }
    // Addresses are multiples of 512: drop those bits, then mix (Fibonacci hashing).
    size_t slot(uintptr_t address) const {
        return static_cast<size_t>(((address >> 9) * 0x9e3779b97f4a7c15ULL) >> shift_);
    }
    void place(uintptr_t address, Block* b) {
        size_t i = slot(address);
        while (slots_[i].address != 0) i = (i + 1) & mask();
        slots_[i] = Slot{address, b};
    }
    void rehash(size_t capacity) {
        auto fresh = std::make_unique<Slot[]>(capacity);
        std::unique_ptr<Slot[]> old = std::move(slots_);
        const size_t oldCapacity = capacity_;
        slots_ = std::move(fresh);
        capacity_ = capacity;
        shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(capacity));
        for (size_t i = 0; i < oldCapacity; ++i)
            if (old[i].address != 0) place(old[i].address, old[i].block);
    }

    std::unique_ptr<Slot[]> slots_;
    size_t capacity_ = 0;
    unsigned shift_ = 64;
    size_t size_ = 0;
};

}  // namespace mtia::allocator
