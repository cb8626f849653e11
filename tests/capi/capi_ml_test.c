/* The management library (mtia_ml.h) from C: errors before init, device identity equal to
 * mtiaGetDeviceProperties, this process's memory in the process list, utilisation, cleanup of a machine in
 * use (kept), a snapshot of this process asked through the registry, the topology's self links,
 * reference-counted init. */
#define _POSIX_C_SOURCE 200809L

#include "capi_check.h"

#include <mtia/mtia_ml.h>

#include <stdio.h>
#include <unistd.h>

int main(void) {
  int32_t count = -1;
  int32_t dev;
  uint32_t n;
  mtiamlDeviceInfo info = MTIAML_DEVICE_INFO_INIT;
  mtiamlProcessInfo procs[4] = {MTIAML_PROCESS_INFO_INIT, MTIAML_PROCESS_INFO_INIT, MTIAML_PROCESS_INFO_INIT,
                                MTIAML_PROCESS_INFO_INIT};
  mtiamlUtilization util = MTIAML_UTILIZATION_INIT;
  mtiamlTopology topo = MTIAML_TOPOLOGY_INIT;
  mtiamlCleanupInfo cleanup = MTIAML_CLEANUP_INFO_INIT;
  char snapshot[64];
  void* ptr = NULL;
  const size_t bytes = (size_t)64 << 20;

  CHECK_STATUS(mtiaErrorInitializationError, mtiamlDeviceGetCount(&count));
  CHECK_STATUS(mtiaErrorInitializationError, mtiamlShutdown());
  CHECK_OK(mtiamlInit());
  CHECK_OK(mtiamlInit()); /* reference counted */
  CHECK_OK(mtiamlDeviceGetCount(&count));
  CHECK_TRUE(count == 2);
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetCount(NULL));
  CHECK_STATUS(mtiaErrorInvalidDevice, mtiamlDeviceGetInfo(count, &info));
  CHECK_STATUS(mtiaErrorInvalidDevice, mtiamlDeviceGetInfo(-1, &info));
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetInfo(0, NULL));

  /* Nothing of this machine is in use yet: no processes, nothing used. */
  n = 4;
  CHECK_OK(mtiamlDeviceGetProcesses(0, &n, procs));
  CHECK_TRUE(n == 0);
  CHECK_OK(mtiamlDeviceGetInfo(0, &info));
  CHECK_TRUE(info.memoryUsed == 0);

  for (dev = 0; dev < count; ++dev) {
    mtiaDeviceProp prop = MTIA_DEVICE_PROP_INIT;
    mtiamlDeviceInfo mine = MTIAML_DEVICE_INFO_INIT;
    CHECK_OK(mtiamlDeviceGetInfo(dev, &mine));
    CHECK_OK(mtiaGetDeviceProperties(&prop, dev));
    CHECK_TRUE(mine.index == dev);
    CHECK_TRUE(strcmp(mine.name, prop.name) == 0);
    CHECK_TRUE(memcmp(mine.uuid, prop.uuid, sizeof mine.uuid) == 0);
    CHECK_TRUE(strcmp(mine.pciBusId, prop.pciBusId) == 0);
    CHECK_TRUE(mine.numaNode == prop.numaNode);
    CHECK_TRUE(mine.memoryTotal == prop.totalGlobalMem);
  }

  /* This process's memory, as another process would see it. */
  CHECK_OK(mtiaSetDevice(0));
  CHECK_OK(mtiaMalloc(&ptr, bytes));
  n = 4;
  CHECK_OK(mtiamlDeviceGetProcesses(0, &n, procs));
  CHECK_TRUE(n == 1);
  CHECK_TRUE(procs[0].pid == (uint32_t)getpid());
  CHECK_TRUE(procs[0].memoryReserved >= bytes);
  CHECK_TRUE(procs[0].memoryAllocated >= bytes);
  CHECK_TRUE(procs[0].memoryPeakAllocated >= bytes);
  CHECK_TRUE(procs[0].name[0] != '\0');
  CHECK_OK(mtiamlDeviceGetInfo(0, &info));
  CHECK_TRUE(info.memoryUsed >= bytes);
  CHECK_TRUE(info.processCount == 1);
  n = 0;
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetProcesses(0, &n, NULL));
  CHECK_TRUE(n == 1);
  n = 4;
  CHECK_OK(mtiamlDeviceGetProcesses(1, &n, procs));
  CHECK_TRUE(n == 0);
  CHECK_OK(mtiaFree(ptr));

  /* Utilisation: this process's copies ran on device 0's engines; nothing ran on device 1. */
  CHECK_OK(mtiamlDeviceGetUtilization(0, &util));
  CHECK_TRUE(util.percent <= 100);
  CHECK_OK(mtiamlDeviceGetUtilization(1, &util));
  CHECK_TRUE(util.percent == 0 && util.busyNs == 0);
  CHECK_STATUS(mtiaErrorInvalidDevice, mtiamlDeviceGetUtilization(7, &util));
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetUtilization(0, NULL));
  CHECK_MESSAGE("utilization");
  util.structSize = 0;
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlDeviceGetUtilization(0, &util));
  util.structSize = sizeof util;

  /* Cleanup of this machine: this process is alive, so the registry stays. */
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlMachineCleanup(MTIAML_MACHINE_CURRENT, NULL));
  CHECK_MESSAGE("info");
  cleanup.structSize = 2;
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlMachineCleanup(MTIAML_MACHINE_CURRENT, &cleanup));
  cleanup.structSize = sizeof cleanup;
  CHECK_STATUS(mtiaErrorNotFound, mtiamlMachineCleanup(4000000, &cleanup));
  CHECK_OK(mtiamlMachineCleanup(MTIAML_MACHINE_CURRENT, &cleanup));
  CHECK_TRUE(cleanup.removed == 0 && cleanup.liveProcesses >= 1 && cleanup.registry[0] != '\0');

  /* A snapshot of this very process, asked through its registry slot: its request thread serves it. */
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlProcessDumpSnapshot((uint32_t)getpid(), NULL, 1000));
  CHECK_MESSAGE("path");
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlProcessDumpSnapshot((uint32_t)getpid(), "", 1000));
  CHECK_MESSAGE("path");
  CHECK_STATUS(mtiaErrorInvalidValue, mtiamlProcessDumpSnapshot(0, "x.json", 1000));
  CHECK_MESSAGE("pid");
  snprintf(snapshot, sizeof snapshot, "/tmp/capi_ml_%ld.json", (long)getpid());
  CHECK_OK(mtiamlProcessDumpSnapshot((uint32_t)getpid(), snapshot, 10000));
  CHECK_TRUE(access(snapshot, R_OK) == 0);
  unlink(snapshot);

  CHECK_OK(mtiamlDeviceGetTopology(1, &topo));
  CHECK_TRUE(topo.deviceCount == count);
  CHECK_TRUE(topo.link[1] == mtiamlLinkSelf);
  CHECK_TRUE(topo.link[0] != mtiamlLinkSelf);
  CHECK_TRUE(topo.cpuAffinity[0] != '\0');
  CHECK_STATUS(mtiaErrorInvalidDevice, mtiamlDeviceGetTopology(2, &topo));

  CHECK_OK(mtiamlShutdown());
  CHECK_OK(mtiamlDeviceGetCount(&count)); /* one reference left */
  CHECK_OK(mtiamlShutdown());
  CHECK_STATUS(mtiaErrorInitializationError, mtiamlDeviceGetCount(&count));
  return capi_summary();
}
