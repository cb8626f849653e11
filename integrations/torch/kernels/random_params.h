/* Arguments of the random number kernels in random_kernels.cpp (plain C, one struct per kernel,
 * copied at launch). Every kernel draws from Philox4x32-10 keyed by the seed, one 128-bit counter
 * per group of elements: element i of the logical (row-major) order uses counter
 * offset / 4 + i / perCounter, so the numbers depend on the seed, the offset and the element's
 * index only, never on the blocks of the launch or on the output's strides. */
#ifndef MTIA_TORCH_RANDOM_PARAMS_H
#define MTIA_TORCH_RANDOM_PARAMS_H

#include "kernel_params.h"

#include <stdint.h>

/* Where a launch's numbers start. Eager launches carry the generator's seed and offset. A launch
 * captured in a graph carries slot, the device address of {seed, offset} (two uint64) that each
 * replay's prologue rewrites from the generator, and offset relative to it. */
typedef struct mtiaTorchPhilox {
    uint64_t seed;
    uint64_t offset; /* in 32-bit numbers, a multiple of 4 */
    uint64_t slot;   /* 0, or the device address of {seed, offset} */
} mtiaTorchPhilox;

typedef enum mtiaTorchRandomKind {
    mtiaTorchRandUniform = 0,         /* out = a + u * (b - a), never b */
    mtiaTorchRandNormal = 1,          /* out = a + b * z (Box-Muller over element pairs) */
    mtiaTorchRandBernoulli = 2,       /* out = u < a */
    mtiaTorchRandBernoulliTensor = 3, /* out = u < in (in: the probabilities) */
    mtiaTorchRandRange = 4,           /* out = base + r % range (range 0: 2^64) */
    mtiaTorchRandExponential = 5,     /* out = -log1p(-u) / a */
    mtiaTorchRandDropout = 6,         /* mask = u < a; out = in * mask * b */
    mtiaTorchRandDropoutBackward = 7  /* out = in * mask * b; draws nothing */
} mtiaTorchRandomKind;

typedef struct mtiaTorchRandom {
    int32_t kind; /* mtiaTorchRandomKind */
    int32_t wide; /* two 32-bit numbers per element (float64 values, 64-bit ranges) */
    int32_t ndim; /* 0..MTIA_TORCH_MAX_DIMS */
    int32_t reserved;
    int64_t sizes[MTIA_TORCH_MAX_DIMS];
    uint64_t numel;
    double a, b;
    uint64_t range;
    int64_t base;
    mtiaTorchPhilox rng;
    mtiaTorchTensorArg out, in, mask; /* strides over sizes; in and mask unused by some kinds */
} mtiaTorchRandom;

/* A random permutation of 0..n-1 written to data (n elements, stride in elements); one block. */
typedef struct mtiaTorchRandperm {
    mtiaTorchPhilox rng;
    uint64_t data;
    int32_t dtype;
    int32_t reserved;
    int64_t stride;
    int64_t n;
} mtiaTorchRandperm;

/* A graph replay's prologue: writes count {seed, offset} pairs to slots. */
#define MTIA_TORCH_MAX_GRAPH_GENERATORS 8
typedef struct mtiaTorchPhiloxSlots {
    uint64_t slots;
    int32_t count;
    int32_t reserved;
    uint64_t values[2 * MTIA_TORCH_MAX_GRAPH_GENERATORS];
} mtiaTorchPhiloxSlots;

#endif /* MTIA_TORCH_RANDOM_PARAMS_H */
