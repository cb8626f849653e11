/* Devices, version, errors and init through the C ABI (default config: 2 simulated devices). */
#include "capi_check.h"

static void test_errors(void) {
    CHECK_TRUE(strcmp(mtiaGetErrorName(mtiaErrorInvalidValue), "mtiaErrorInvalidValue") == 0);
    CHECK_TRUE(strcmp(mtiaGetErrorName(mtiaErrorStreamCaptureWrongThread),
                      "mtiaErrorStreamCaptureWrongThread") == 0);
    CHECK_TRUE(strcmp(mtiaGetErrorName((mtiaError_t)4242), "unrecognized error code") == 0);
    CHECK_TRUE(mtiaGetErrorString(mtiaErrorMemoryAllocation)[0] != '\0');
    CHECK_TRUE(mtiaGetLastErrorMessage() != NULL);
}

static void test_version_and_init(void) {
    int major = -1, minor = -1, patch = -1;
    const char* name = NULL;
    CHECK_OK(mtiaRuntimeGetVersion(&major, &minor, &patch));
    CHECK_TRUE(major == MTIA_VERSION_MAJOR && minor == MTIA_VERSION_MINOR &&
               patch == MTIA_VERSION_PATCH);
    CHECK_OK(mtiaRuntimeGetVersion(NULL, NULL, NULL));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaInit(0x80));
    CHECK_MESSAGE("mtiaInit: flags");
    CHECK_OK(mtiaInit(0));
    CHECK_OK(mtiaInit(0));
    CHECK_OK(mtiaDriverGetName(&name));
    CHECK_TRUE(name != NULL && strcmp(name, "sim") == 0);
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaDriverGetName(NULL));
    CHECK_MESSAGE("name is NULL");
}

static void test_current_device(void) {
    int count = -1, dev = -1, prev = -1;
    CHECK_OK(mtiaGetDeviceCount(&count));
    CHECK_TRUE(count == 2);
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaGetDeviceCount(NULL));
    CHECK_OK(mtiaGetDevice(&dev));
    CHECK_TRUE(dev == 0);
    CHECK_OK(mtiaSetDevice(1));
    CHECK_OK(mtiaGetDevice(&dev));
    CHECK_TRUE(dev == 1);
    CHECK_OK(mtiaExchangeDevice(0, &prev));
    CHECK_TRUE(prev == 1);
    CHECK_OK(mtiaGetDevice(&dev));
    CHECK_TRUE(dev == 0);
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaSetDevice(2));
    CHECK_MESSAGE("dev is 2; valid devices are 0 to 1");
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaSetDevice(-1));
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaExchangeDevice(7, &prev));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaExchangeDevice(0, NULL));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaGetDevice(NULL));
    CHECK_OK(mtiaGetDevice(&dev));
    CHECK_TRUE(dev == 0); /* failed calls change nothing */
}

static void test_properties(void) {
    mtiaDeviceProp p0 = MTIA_DEVICE_PROP_INIT, p1 = MTIA_DEVICE_PROP_INIT;
    mtiaDeviceProp small;
    int least = 1, greatest = 1;
    CHECK_OK(mtiaGetDeviceProperties(&p0, 0));
    CHECK_OK(mtiaGetDeviceProperties(&p1, 1));
    CHECK_TRUE(strlen(p0.name) > 0);
    CHECK_TRUE(p0.totalGlobalMem == 16ull * 1024 * 1024 * 1024);
    CHECK_TRUE(p0.multiProcessorCount >= 1);
    CHECK_TRUE(p0.maxThreadsPerBlock > 0);
    CHECK_TRUE(p0.allocationGranularity > 0);
    CHECK_TRUE(p0.numaNode >= -1);
    CHECK_TRUE(strcmp(p0.pciBusId, p1.pciBusId) != 0);
    CHECK_TRUE(memcmp(p0.uuid, p1.uuid, sizeof p0.uuid) != 0);
    CHECK_TRUE(p0.streamPriorityGreatest < p0.streamPriorityLeast);
    CHECK_OK(mtiaDeviceGetStreamPriorityRange(&least, &greatest));
    CHECK_TRUE(least == p0.streamPriorityLeast && greatest == p0.streamPriorityGreatest);
    CHECK_TRUE(least - greatest >= 2); /* at least 3 levels */
    CHECK_OK(mtiaDeviceGetStreamPriorityRange(NULL, NULL));

    /* An older caller's smaller struct: nothing past structSize is written. */
    memset(&small, 0xAB, sizeof small);
    small.structSize = 4 + 256;
    CHECK_OK(mtiaGetDeviceProperties(&small, 0));
    CHECK_TRUE(strcmp(small.name, p0.name) == 0);
    CHECK_TRUE(small.uuid[0] == 0xAB && small.uuid[15] == 0xAB);

    CHECK_STATUS(mtiaErrorInvalidValue, mtiaGetDeviceProperties(NULL, 0));
    CHECK_MESSAGE("prop is NULL");
    small.structSize = 0;
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaGetDeviceProperties(&small, 0));
    CHECK_MESSAGE("structSize");
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaGetDeviceProperties(&p0, 2));
}

static void test_memory_info_and_peers(void) {
    size_t free_mem = 0, total = 0;
    int can = -1;
    CHECK_OK(mtiaMemGetInfo(&free_mem, &total));
    CHECK_TRUE(total == 16ull * 1024 * 1024 * 1024 && free_mem <= total);
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemGetInfo(NULL, &total));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaMemGetInfo(&free_mem, NULL));

    CHECK_OK(mtiaDeviceCanAccessPeer(&can, 0, 1));
    CHECK_TRUE(can == 1);
    CHECK_OK(mtiaDeviceCanAccessPeer(&can, 1, 1));
    CHECK_TRUE(can == 0);
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaDeviceCanAccessPeer(&can, 0, 5));
    CHECK_MESSAGE("peer is 5");
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaDeviceCanAccessPeer(&can, -2, 0));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaDeviceCanAccessPeer(NULL, 0, 1));

    CHECK_OK(mtiaSetDevice(0));
    CHECK_OK(mtiaDeviceEnablePeerAccess(1, 0));
    CHECK_STATUS(mtiaErrorIllegalState, mtiaDeviceEnablePeerAccess(1, 0));
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaDeviceEnablePeerAccess(0, 0));
    CHECK_STATUS(mtiaErrorInvalidValue, mtiaDeviceEnablePeerAccess(1, 3));
    CHECK_OK(mtiaDeviceDisablePeerAccess(1));
    CHECK_STATUS(mtiaErrorIllegalState, mtiaDeviceDisablePeerAccess(1));
    CHECK_STATUS(mtiaErrorInvalidDevice, mtiaDeviceDisablePeerAccess(9));
    CHECK_OK(mtiaDeviceSynchronize());
}

int main(void) {
    test_errors();
    test_version_and_init();
    test_current_device();
    test_properties();
    test_memory_info_and_peers();
    return capi_summary();
}
