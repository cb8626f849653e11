/* Internal entry point of the simulated device driver.
 *
 * libmtia.so links the simulator statically and asks it for its table through
 * this function; the loadable module mtia_driver_sim.so exports the same table
 * as mtiaDriverGetOps. The symbol is hidden so that it never leaks out of
 * libmtia.so next to the public mtia* API. C-compatible. */
#ifndef MTIA_SIM_DRIVER_H
#define MTIA_SIM_DRIVER_H

#include <mtia/mtia_driver.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills ops like mtiaDriverGetOps (see mtia_driver.h): refuses another major version
 * (mtiaErrorNotSupported), NULL ops (mtiaErrorInvalidValue), writes at most ops->structSize bytes. */
__attribute__((visibility("hidden"))) mtiaError_t mtiaSimDriverGetOps(uint32_t apiVersion, mtiaDriverOps* ops);

/* What identifies a simulated machine: its MTIA_SIM_* configuration (and the registry it shares). */
typedef struct mtiaSimMachineSpec {
  int32_t devices;
  int32_t engines;
  uint64_t memoryBytes; /* per device */
  char machine[256];    /* MTIA_SIM_MACHINE, "" when unset */
} mtiaSimMachineSpec;

/* The machine the environment configures, read without initialising the driver. Thread-safe, does
 * not block. Errors: mtiaErrorInvalidValue (spec NULL, a bad MTIA_SIM_* variable, or a machine name
 * of 256 bytes or more), with a sentence naming the variable in error (errorSize bytes, may be NULL). */
__attribute__((visibility("hidden"))) mtiaError_t mtiaSimMachineFromEnvironment(mtiaSimMachineSpec* spec,
                                                                                 char* error, size_t errorSize);

/* Describes device index of the machine spec without starting it: name, uuid, pciBusId, pciBus,
 * totalMemory, engines, major, minor, numaNode and the launch limits, exactly as deviceGetInfo
 * reports them (vaBase and vaSize stay 0). Thread-safe; the first call of the process loads the host
 * topology. Errors: mtiaErrorInvalidValue (spec or info NULL), mtiaErrorInvalidDevice. */
__attribute__((visibility("hidden"))) mtiaError_t mtiaSimDescribeDevice(const mtiaSimMachineSpec* spec,
                                                                         int32_t index, mtiaDrvDeviceInfo* info);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_SIM_DRIVER_H */
