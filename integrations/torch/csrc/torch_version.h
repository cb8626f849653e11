// The PyTorch version the extension is compiled against, and the interface differences it selects.
// Only 1.13 (Debian 12) is built and tested; the other branches follow the reference notes
// (reference/pytorch-mtia-surface.md section 6) and are unverified.
#pragma once

#include <torch/version.h>

// c10::Allocator::allocate lost its const in PyTorch 2.3.
#define TORCH_MTIA_ALLOCATE_IS_CONST                                                               \
    (TORCH_VERSION_MAJOR < 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR < 3))
