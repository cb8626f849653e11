// A free list per object size for the allocator's own bookkeeping objects
// (blocks, nodes of the free-block sets): splitting and merging blocks on
// every allocation and free then costs a pointer swap instead of a trip to
// malloc. Objects return to the list, never to the heap, until the recycler
// goes away. Not thread-safe: the device allocator's lock guards it.
#pragma once

#include <cstddef>
#include <new>

namespace mtia::allocator {

class NodeRecycler {
public:
    NodeRecycler() = default;
    NodeRecycler(const NodeRecycler&) = delete;
    NodeRecycler& operator=(const NodeRecycler&) = delete;
    ~NodeRecycler() {
        for (List& l : lists_)
            while (l.head != nullptr) {
                Node* n = l.head;
                l.head = n->next;
                ::operator delete(n);
            }
    }

    // size bytes, suitably aligned for any object. Throws std::bad_alloc.
    void* allocate(size_t size) {
        List& l = listFor(size);
        if (Node* n = l.head) {
            l.head = n->next;
            return n;
        }
        return ::operator new(size < sizeof(Node) ? sizeof(Node) : size);
    }
    // p came from allocate(size).
    void deallocate(void* p, size_t size) noexcept {
        List& l = listFor(size);
        auto* n = static_cast<Node*>(p);
        n->next = l.head;
        l.head = n;
    }

private:
    struct Node {
        Node* next;
    };
    struct List {
        size_t size = 0;
        Node* head = nullptr;
    };
    static constexpr size_t kSizes = 4;  // blocks and set nodes need two

    List& listFor(size_t size) noexcept {
        for (List& l : lists_) {
            if (l.size == size) return l;
            if (l.size == 0) {
                l.size = size;
                return l;
            }
        }
        return overflow_;  // more sizes than expected: still correct, as the overflow list is never
                           // mixed
    }

    List lists_[kSizes];
    List overflow_;
};

// A standard allocator over a NodeRecycler, for containers of one pool.
template <class T>
class RecyclingAllocator {
public:
    using value_type = T;
    explicit RecyclingAllocator(NodeRecycler* r) noexcept : recycler_(r) {}
    template <class U>
    RecyclingAllocator(const RecyclingAllocator<U>& o) noexcept : recycler_(o.recycler()) {}
    T* allocate(size_t n) {
        if (n != 1) return static_cast<T*>(::operator new(n * sizeof(T)));
        return static_cast<T*>(recycler_->allocate(sizeof(T)));
    }
    void deallocate(T* p, size_t n) noexcept {
        if (n != 1) {
            ::operator delete(p);
            return;
        }
        recycler_->deallocate(p, sizeof(T));
    }
    NodeRecycler* recycler() const noexcept { return recycler_; }
    template <class U>
    bool operator==(const RecyclingAllocator<U>& o) const noexcept {
        return recycler_ == o.recycler();
    }

private:
    NodeRecycler* recycler_;
};

}  // namespace mtia::allocator
