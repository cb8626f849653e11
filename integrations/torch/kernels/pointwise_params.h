/* Arguments of the pointwise kernel (pointwise_kernels.cpp): one operation applied element by
 * element over an N-dimensional index space, with up to three inputs and one output of any dtype
 * and strides. The host side (csrc/pointwise.cpp) broadcasts, promotes types, orders and coalesces
 * the dimensions; dimension 0 is the innermost (fastest-varying) one. Plain C: the struct is the
 * kernel's one argument, copied at launch, so a graph replay sees the same values. */
#ifndef MTIA_TORCH_POINTWISE_PARAMS_H
#define MTIA_TORCH_POINTWISE_PARAMS_H

#include "kernel_params.h"

#define MTIA_TORCH_POINTWISE_MAX_INPUTS 3

/* What the values are computed in: half, bfloat16 and float32 in float, float64 in double, the
 * integer types and bool in int64 (stored back with wrap-around, as the CPU's integer arithmetic).
 */
typedef enum mtiaTorchCompute {
    mtiaTorchComputeFloat = 0,
    mtiaTorchComputeDouble = 1,
    mtiaTorchComputeInt64 = 2
} mtiaTorchCompute;

/* The operations; x, y, z are the inputs, s0..s3 the params' scalars (f for floating computations,
 * i for integer ones). */
typedef enum mtiaTorchPointwiseOp {
    /* no input */
    mtiaTorchPwFill = 0, /* s0 */
    /* unary */
    mtiaTorchPwCopy,
    mtiaTorchPwNeg,
    mtiaTorchPwAbs,
    mtiaTorchPwExp,
    mtiaTorchPwExp2,
    mtiaTorchPwExpm1,
    mtiaTorchPwLog,
    mtiaTorchPwLog2,
    mtiaTorchPwLog10,
    mtiaTorchPwLog1p,
    mtiaTorchPwSqrt,
    mtiaTorchPwRsqrt,
    mtiaTorchPwSin,
    mtiaTorchPwCos,
    mtiaTorchPwTan,
    mtiaTorchPwAsin,
    mtiaTorchPwAcos,
    mtiaTorchPwAtan,
    mtiaTorchPwSinh,
    mtiaTorchPwCosh,
    mtiaTorchPwTanh,
    mtiaTorchPwAsinh,
    mtiaTorchPwAcosh,
    mtiaTorchPwAtanh,
    mtiaTorchPwErf,
    mtiaTorchPwErfc,
    mtiaTorchPwSigmoid,
    mtiaTorchPwFloor,
    mtiaTorchPwCeil,
    mtiaTorchPwRound,
    mtiaTorchPwRoundDecimals, /* s0 = 10^decimals (i0: decimals >= 0) */
    mtiaTorchPwTrunc,
    mtiaTorchPwFrac,
    mtiaTorchPwSign,
    mtiaTorchPwSgn,
    mtiaTorchPwReciprocal,
    mtiaTorchPwLogicalNot,
    mtiaTorchPwBitwiseNot,
    mtiaTorchPwIsNan,
    mtiaTorchPwIsInf,
    mtiaTorchPwIsFinite,
    mtiaTorchPwIsPosInf,
    mtiaTorchPwIsNegInf,
    mtiaTorchPwSignbit,
    mtiaTorchPwNanToNum, /* s0 nan, s1 posinf, s2 neginf replacements */
    mtiaTorchPwRelu,
    mtiaTorchPwSilu,
    mtiaTorchPwGelu,
    mtiaTorchPwGeluTanh,
    mtiaTorchPwSoftplus,  /* s0 beta, s1 threshold */
    mtiaTorchPwLeakyRelu, /* s0 negative slope */
    mtiaTorchPwElu,       /* s0 alpha, s1 scale, s2 input scale */
    mtiaTorchPwHardtanh,  /* s0 min, s1 max */
    mtiaTorchPwThreshold, /* x <= s0 ? s1 : x */
    mtiaTorchPwHardsigmoid,
    mtiaTorchPwHardswish,
    mtiaTorchPwClampScalar, /* i0: has min (s0), i1: has max (s1) */
    mtiaTorchPwPowScalar,   /* x ** s0 */
    mtiaTorchPwScalarPow,   /* s0 ** x */
    mtiaTorchPwAddScalar,   /* x + s0 */
    mtiaTorchPwMulScalar,   /* x * s0 */
    /* binary */
    mtiaTorchPwAdd, /* x + s0 * y; i1: 1 half, 2 bfloat16, i2: the CPU's vector width
                       (ops_pointwise) */
    mtiaTorchPwMul,
    mtiaTorchPwDiv,
    mtiaTorchPwDivTrunc, /* i1 as for add: the quotient rounded first */
    mtiaTorchPwDivFloor, /* i1 as for add: every step rounded (two tensors, as the CPU) */
    mtiaTorchPwRemainder,
    mtiaTorchPwFmod,
    mtiaTorchPwPow,
    mtiaTorchPwMaximum,
    mtiaTorchPwMinimum,
    mtiaTorchPwFmax,
    mtiaTorchPwFmin,
    mtiaTorchPwAtan2,
    mtiaTorchPwHypot,
    mtiaTorchPwCopysign,
    mtiaTorchPwXlogy,
    mtiaTorchPwEq,
    mtiaTorchPwNe,
    mtiaTorchPwLt,
    mtiaTorchPwLe,
    mtiaTorchPwGt,
    mtiaTorchPwGe,
    mtiaTorchPwLogicalAnd,
    mtiaTorchPwLogicalOr,
    mtiaTorchPwLogicalXor,
    mtiaTorchPwBitwiseAnd,
    mtiaTorchPwBitwiseOr,
    mtiaTorchPwBitwiseXor,
    mtiaTorchPwLshift,
    mtiaTorchPwRshift,
    mtiaTorchPwLerpScalar,        /* x + s0 * (y - x) */
    mtiaTorchPwThresholdBackward, /* x: grad, y: input; y <= s0 ? 0 : x */
    mtiaTorchPwGeluBackward,      /* x: grad, y: input; i0: tanh approximation */
    mtiaTorchPwSiluBackward,      /* x: grad, y: input */
    mtiaTorchPwSigmoidBackward,   /* x: grad, y: output */
    mtiaTorchPwTanhBackward,      /* x: grad, y: output */
    mtiaTorchPwSoftplusBackward,  /* x: grad, y: input; s0 beta, s1 threshold */
    mtiaTorchPwLeakyReluBackward, /* x: grad, y: input; s0 slope */
    mtiaTorchPwEluBackward, /* x: grad, y: input or result (i0); s0 alpha, s1 scale, s2 in scale */
    mtiaTorchPwHardtanhBackward,    /* x: grad, y: input; s0 min, s1 max */
    mtiaTorchPwHardsigmoidBackward, /* x: grad, y: input */
    mtiaTorchPwHardswishBackward,   /* x: grad, y: input */
    /* ternary */
    mtiaTorchPwWhere,       /* x ? y : z */
    mtiaTorchPwAddcmul,     /* x + s0 * y * z */
    mtiaTorchPwAddcdiv,     /* x + s0 * y / z */
    mtiaTorchPwLerpTensor,  /* x + z * (y - x) */
    mtiaTorchPwClampTensor, /* i0: has min (y), i1: has max (z) */
    mtiaTorchPwOpCount
} mtiaTorchPointwiseOp;

typedef struct mtiaTorchOperand {
    uint64_t data;     /* device address of the element at index 0; 0 for an immediate */
    int32_t dtype;     /* mtiaTorchDtype */
    int32_t immediate; /* 1: a number given by value (a CPU scalar operand): fvalue or ivalue */
    double fvalue;
    int64_t ivalue;
    int64_t strides[MTIA_TORCH_MAX_DIMS]; /* elements, dimension 0 innermost */
} mtiaTorchOperand;

typedef struct mtiaTorchPointwise {
    int32_t op;      /* mtiaTorchPointwiseOp */
    int32_t compute; /* mtiaTorchCompute */
    int32_t ndim;    /* 0..MTIA_TORCH_MAX_DIMS; 0 is a single element */
    int32_t ninputs;
    int64_t sizes[MTIA_TORCH_MAX_DIMS]; /* dimension 0 innermost */
    uint64_t numel;
    double f[4];
    int64_t i[4];
    mtiaTorchOperand out;
    mtiaTorchOperand in[MTIA_TORCH_POINTWISE_MAX_INPUTS];
} mtiaTorchPointwise;

/* A batch of one-dimensional pointwise problems, run in order by one launch
 * (mtia_torch_pointwise_batch): the per-tensor steps of a foreach operator. Each problem is a
 * mtiaTorchPointwise whose index space has at most one dimension, stored flat so that
 * MTIA_TORCH_POINTWISE_BATCH_MAX of them fit the launch's argument limit (4 KiB). */
#define MTIA_TORCH_POINTWISE_BATCH_MAX 16

typedef struct mtiaTorchFlatOperand {
    uint64_t data; /* as mtiaTorchOperand */
    int32_t dtype;
    int32_t immediate;
    double fvalue;
    int64_t ivalue;
    int64_t stride; /* elements; 0 broadcasts one element */
} mtiaTorchFlatOperand;

typedef struct mtiaTorchFlatPointwise {
    int32_t op;
    int32_t compute;
    int32_t ndim; /* 0 or 1 */
    int32_t ninputs;
    uint64_t numel; /* the size of dimension 0 when ndim is 1 */
    double f[4];
    int64_t i[4];
    mtiaTorchFlatOperand out;
    mtiaTorchFlatOperand in[MTIA_TORCH_POINTWISE_MAX_INPUTS];
} mtiaTorchFlatPointwise;

typedef struct mtiaTorchPointwiseBatch {
    int32_t count; /* 1..MTIA_TORCH_POINTWISE_BATCH_MAX */
    int32_t reserved;
    mtiaTorchFlatPointwise items[MTIA_TORCH_POINTWISE_BATCH_MAX];
} mtiaTorchPointwiseBatch;

#endif /* MTIA_TORCH_POINTWISE_PARAMS_H */
