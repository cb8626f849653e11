/* Writes a memory snapshot of a small workload in JSON and as a pickle through the C ABI alone
 * (history_dump JSON PICKLE), for snapshot_python_check.sh: Python's pickle must read our pickle as
 * the same document as our JSON. */
#include <mtia/mtia.h>

#include <stdio.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        mtiaError_t st_ = (call);                                                                  \
        if (st_ != mtiaSuccess) {                                                                  \
            fprintf(stderr, "%s failed: %s: %s\n", #call, mtiaGetErrorName(st_),                   \
                    mtiaGetLastErrorMessage());                                                    \
            return 1;                                                                              \
        }                                                                                          \
    } while (0)

int main(int argc, char** argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: history_dump OUT.json OUT.pickle\n");
        return 2;
    }
    CHECK(mtiaMemoryRecordHistory(mtiaHistoryAll, mtiaStacksCpp, 0));
    CHECK(mtiaMemoryAnnotate("step", "1"));
    void* small = NULL;
    void* large = NULL;
    void* gone = NULL;
    CHECK(mtiaMalloc(&small, 1000));
    CHECK(mtiaMalloc(&large, (size_t)5 << 20));
    CHECK(mtiaMalloc(&gone, (size_t)700 << 10));
    CHECK(mtiaFree(gone));
    mtiaMemPoolId_t pool;
    CHECK(mtiaGraphPoolHandle(&pool));
    CHECK(mtiaMemPoolBeginAllocateToPool(0, pool, NULL));
    void* pooled = NULL;
    CHECK(mtiaMalloc(&pooled, (size_t)3 << 20));
    CHECK(mtiaMemPoolEndAllocateToPool(0, pool));
    CHECK(mtiaMemoryAnnotate("step", NULL));
    CHECK(mtiaMemoryDumpSnapshot(argv[1], mtiaSnapshotJson, mtiaSnapshotIncludeTraces));
    CHECK(mtiaMemoryDumpSnapshot(argv[2], mtiaSnapshotPickle, mtiaSnapshotIncludeTraces));
    CHECK(mtiaFree(small));
    CHECK(mtiaFree(large));
    CHECK(mtiaFree(pooled));
    return 0;
}
