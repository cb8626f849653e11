/* Internal entry point of the simulated device driver.
 *
 * libmtia.so links the simulator statically and asks it for its table through
 * this function (platform/driver/builtin_drivers.hpp declares it for the
 * runtime); the loadable module mtia_driver_sim.so exports the same table as
 * mtiaDriverGetOps. The symbol is hidden so that it never leaks out of
 * libmtia.so next to the public mtia* API. C-compatible. */
#ifndef MTIA_SIM_DRIVER_H
#define MTIA_SIM_DRIVER_H

#include <mtia/mtia_driver.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Fills ops like mtiaDriverGetOps (see mtia_driver.h): refuses another major version
 * (mtiaErrorNotSupported), NULL ops (mtiaErrorInvalidValue), writes at most ops->structSize bytes.
 */
__attribute__((visibility("hidden"))) mtiaError_t mtiaSimDriverGetOps(uint32_t apiVersion,
                                                                      mtiaDriverOps* ops);

#ifdef __cplusplus
}
#endif

#endif /* MTIA_SIM_DRIVER_H */
