/* The runtime driven through an out-of-tree driver loaded by path
 * (MTIA_DRIVER). Modes: good | wrong_major | missing_submit | ml. */
#include "../capi/capi_check.h"

#include <mtia/mtia_ml.h>

static void count_call(void* calls) {
    ++*(int*)calls;
}

static void good(void) {
    const char* name = NULL;
    int count = 0;
    mtiaDeviceProp p = MTIA_DEVICE_PROP_INIT;
    mtiaFunction_t fn = NULL;
    char in[100], out[100];
    void* d = NULL;
    size_t free_mem, total;
    int i;
    for (i = 0; i < 100; ++i) in[i] = (char)i;
    CHECK_OK(mtiaDriverGetName(&name));
    CHECK_TRUE(name && strcmp(name, "minimal") == 0);
    CHECK_OK(mtiaGetDeviceCount(&count));
    CHECK_TRUE(count == 1);
    CHECK_OK(mtiaGetDeviceProperties(&p, 0));
    CHECK_TRUE(strcmp(p.name, "Minimal Test Device") == 0 &&
               strcmp(p.pciBusId, "0000:42:00.0") == 0);
    CHECK_OK(mtiaMalloc(&d, sizeof in));
    CHECK_OK(mtiaMemGetInfo(&free_mem, &total));
    CHECK_TRUE(total - free_mem ==
               2 * 1024 * 1024); /* one small-pool segment, in 64 KiB granules */
    CHECK_OK(mtiaMemcpy(d, in, sizeof in, mtiaMemcpyHostToDevice));
    CHECK_OK(mtiaMemset(d, 7, 10));
    CHECK_OK(mtiaMemcpy(out, d, sizeof out, mtiaMemcpyDeviceToHost));
    CHECK_TRUE(out[9] == 7 && out[10] == 10 && out[99] == 99);
    CHECK_OK(mtiaDeviceSynchronize());
    {
        /* A driver older than 1.4 shares nothing between processes. */
        mtiaIpcMemHandle_t h;
        void* opened = NULL;
        memset(&h, 0, sizeof h);
        CHECK_STATUS(mtiaErrorNotSupported, mtiaIpcGetMemHandle(&h, d));
        CHECK_MESSAGE("driver ABI 1.4");
        CHECK_STATUS(mtiaErrorNotSupported, mtiaIpcOpenMemHandle(&opened, h, 0));
    }
    CHECK_OK(mtiaFree(d));
    /* Streams and events over a driver without queueGetCounts: the runtime counts submissions
     * itself. */
    {
        mtiaStream_t s = NULL;
        mtiaEvent_t e = NULL;
        int calls = 0;
        CHECK_OK(mtiaStreamCreate(&s));
        CHECK_OK(mtiaEventCreateWithFlags(&e, mtiaEventDisableTiming));
        CHECK_OK(mtiaLaunchHostFunc(s, count_call, &calls));
        CHECK_OK(mtiaEventRecord(e, s));
        CHECK_OK(mtiaStreamSynchronize(s));
        CHECK_OK(mtiaStreamQuery(s));
        CHECK_OK(mtiaEventQuery(e));
        CHECK_OK(mtiaEventSynchronize(e));
        CHECK_TRUE(calls == 1);
        CHECK_OK(mtiaEventDestroy(e));
        CHECK_OK(mtiaStreamDestroy(s));
    }
    /* Optional entries the driver left out answer "not supported". */
    CHECK_STATUS(mtiaErrorNotSupported, mtiaGetBuiltinFunction(&fn, "fill_f32"));
    CHECK_MESSAGE("not supported");
}

/* The management library over a driver without the driver ABI 1.6 machine entries: it initialises
 * (the machine list needs no driver), and every call about the machine's devices is NotSupported
 * naming the entry the driver lacks. Nothing starts the driver: the runtime stays uninitialised. */
static void ml(void) {
    int32_t count = -1;
    uint32_t machines = 0;
    mtiamlDeviceInfo info = MTIAML_DEVICE_INFO_INIT;
    mtiamlUtilization utilization = MTIAML_UTILIZATION_INIT;
    mtiamlCleanupInfo cleanup = MTIAML_CLEANUP_INFO_INIT;
    CHECK_OK(mtiamlInit());
    CHECK_STATUS(mtiaErrorNotSupported, mtiamlDeviceGetCount(&count));
    CHECK_MESSAGE("'machineGetSpec'");
    CHECK_MESSAGE("driver 'minimal'");
    CHECK_MESSAGE("driver ABI 1.6");
    CHECK_STATUS(mtiaErrorNotSupported, mtiamlDeviceGetInfo(0, &info));
    CHECK_MESSAGE("'machineGetSpec'");
    CHECK_STATUS(mtiaErrorNotSupported, mtiamlDeviceGetUtilization(0, &utilization));
    CHECK_STATUS(mtiaErrorNotSupported, mtiamlMachineCleanup(MTIAML_MACHINE_CURRENT, &cleanup));
    CHECK_OK(mtiamlMachineGetCount(&machines));
    CHECK_OK(mtiamlShutdown());
}

static void refused(const char* needle) {
    int count = -1;
    CHECK_OK(mtiaGetDeviceCount(&count));
    CHECK_TRUE(count == 0);
    CHECK_STATUS(mtiaErrorInitializationError, mtiaInit(0));
    CHECK_MESSAGE(needle);
}

int main(int argc, char** argv) {
    const char* mode = argc > 1 ? argv[1] : "good";
    if (strcmp(mode, "good") == 0)
        good();
    else if (strcmp(mode, "wrong_major") == 0)
        refused("driver ABI 2.0");
    else if (strcmp(mode, "missing_submit") == 0)
        refused("'queueSubmit'");
    else if (strcmp(mode, "ml") == 0)
        ml();
    else
        return 2;
    return capi_summary();
}
