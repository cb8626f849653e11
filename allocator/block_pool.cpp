#include "allocator/block_pool.hpp"

#include "allocator/segment.hpp"

#include <iterator>

namespace mtia::allocator {

Block* splitBlock(Block* b, size_t rounded) {
    Block* rest = b->pool->makeBlock();
    rest->address = b->address + rounded;
    rest->size = b->size - rounded;
    rest->stream = b->stream;
    rest->pool = b->pool;
    rest->segment = b->segment;
    rest->mapped = b->mapped;
    rest->prev = b;
    rest->next = b->next;
    if (b->next != nullptr) b->next->prev = rest;
    b->next = rest;
    b->size = rounded;
    return rest;
}

size_t mergeFreeNeighbours(Block* b) {
    size_t gained = 0;
    if (Block* p = b->prev; p != nullptr && b->pool->erase(p)) {
        b->address = p->address;
        b->size += p->size;
        gained += p->size;
        b->prev = p->prev;
        if (b->prev != nullptr) b->prev->next = b;
        if (b->segment != nullptr && b->segment->head == p) b->segment->head = b;
        b->pool->destroyBlock(p);
    }
    if (Block* n = b->next; n != nullptr && b->pool->erase(n)) {
        b->size += n->size;
        gained += n->size;
        b->next = n->next;
        if (b->next != nullptr) b->next->prev = b;
        b->pool->destroyBlock(n);
    }
    return gained;
}

void BlockPool::insert(Block* b) {
    free_.insert(b);
    b->cached = true;
}

bool BlockPool::erase(Block* b) {
    if (!contains(b)) return false;
    if (lastFit_ != free_.end() && *lastFit_ == b) {
        free_.erase(lastFit_);
        lastFit_ = free_.end();
    } else {
        free_.erase(b);
    }
    b->cached = false;
    return true;
}

void BlockPool::rekey(Block* b, uintptr_t address, size_t size) {
    auto it = lastFit_ != free_.end() && *lastFit_ == b ? lastFit_ : free_.find(b);
    b->address = address;
    b->size = size;
    // Changing a key in place is sound while the element stays between its neighbours (trivially so
    // when it is alone, as the one free block of a segment often is).
    if (free_.size() == 1) return;
    const ByStreamSizeAddress less;
    const bool afterPrev = it == free_.begin() || less(*std::prev(it), b);
    const bool beforeNext = std::next(it) == free_.end() || less(b, *std::next(it));
    if (afterPrev && beforeNext) return;
    if (it == lastFit_) lastFit_ = free_.end();
    free_.erase(it);  // by position: no comparisons with the changed key
    b->cached = false;
    insert(b);
}

Block* BlockPool::makeBlock() {
    return new (store_.allocate(sizeof(Block))) Block;
}

void BlockPool::destroyBlock(Block* b) noexcept {
    b->~Block();
    store_.deallocate(b, sizeof(Block));
}

Block* BlockPool::bestFit(uint64_t stream, size_t rounded, const AllocConfig& config) const {
    Block key;
    key.stream = stream;
    key.size = rounded;
    auto it = free_.lower_bound(&key);
    if (it == free_.end() || (*it)->stream != stream) return nullptr;
    lastFit_ = it;
    // The smallest block that is large enough: if it may not serve the request, no larger one may
    // either (larger blocks are oversize too, or waste more).
    return mayServe((*it)->size, rounded, config) ? *it : nullptr;
}

}  // namespace mtia::allocator
