// The only exported symbol of mtia_driver_sim.so: the loader looks it up by name
// (MTIA_DRIVER_GET_OPS_SYMBOL) after dlopen().
#include "sim_driver.h"

extern "C" __attribute__((visibility("default"))) mtiaError_t mtiaDriverGetOps(uint32_t apiVersion,
                                                                               mtiaDriverOps* ops) {
    return mtiaSimDriverGetOps(apiVersion, ops);
}
