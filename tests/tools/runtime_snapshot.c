/* Writes a memory snapshot of our own runtime, so that mtia_mem_commands.sh checks mtia-mem on what
 * mtiaMemorySnapshot really produces (not only on hand-written fixtures): history recorded with C++
 * stacks, blocks allocated in two named functions of this program, one freed, one freed and
 * allocated again, then the snapshot as JSON and as a pickle.
 * Usage: runtime_snapshot OUT.json OUT.pickle */
#include <mtia/mtia.h>

#include <stdio.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        mtiaError_t err_ = (call);                                                                 \
        if (err_ != mtiaSuccess) {                                                                 \
            fprintf(stderr, "runtime_snapshot: %s failed: %s\n", #call,                            \
                    mtiaGetLastErrorMessage());                                                    \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

/* Not inlined, not static (the snapshot names frames from the symbol table), and with work after
 * the call, so that it is no tail call and the function's frame is on the stack when mtiaMalloc
 * runs. */
static volatile int allocations;
__attribute__((noinline)) mtiaError_t allocate_activations(void** p, size_t size) {
    const mtiaError_t err = mtiaMalloc(p, size);
    allocations = allocations + 1;
    return err;
}
__attribute__((noinline)) mtiaError_t allocate_workspace(void** p, size_t size) {
    const mtiaError_t err = mtiaMalloc(p, size);
    allocations = allocations + 1;
    return err;
}

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: runtime_snapshot OUT.json OUT.pickle\n");
        return 2;
    }
    void *a = NULL, *b = NULL, *c = NULL, *w = NULL;
    CHECK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, 0));
    CHECK(allocate_activations(&a, 3u << 20));
    CHECK(allocate_activations(&b, 1u << 20));
    CHECK(allocate_workspace(&w, 512u << 10));
    CHECK(mtiaFree(b));
    CHECK(allocate_activations(&c, 1u << 20));
    CHECK(mtiaMemoryDumpSnapshot(argv[1], mtiaSnapshotJson, mtiaSnapshotIncludeTraces));
    CHECK(mtiaMemoryDumpSnapshot(argv[2], mtiaSnapshotPickle, mtiaSnapshotIncludeTraces));
    CHECK(mtiaFree(a));
    CHECK(mtiaFree(c));
    CHECK(mtiaFree(w));
    return 0;
}
