#include "allocator/block_pool.hpp"

#include "allocator/segment.hpp"

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
  free_.erase(b);
  b->cached = false;
  return true;
}

Block* BlockPool::makeBlock() { return new (store_.allocate(sizeof(Block))) Block; }

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
  // The smallest block that is large enough: if it may not serve the request, no larger one may either
  // (larger blocks are oversize too, or waste more).
  return mayServe((*it)->size, rounded, config) ? *it : nullptr;
}

}  // namespace mtia::allocator
