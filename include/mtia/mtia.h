/* MTIA runtime: the umbrella header. Include this one. */
#ifndef MTIA_H
#define MTIA_H

#include "mtia_graph.h"
#include "mtia_ipc.h"
#include "mtia_memory_history.h"
#include "mtia_runtime.h"
#include "mtia_types.h"
#include "mtia_version.h"

#endif /* MTIA_H */
