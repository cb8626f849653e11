"""Prints what a build needs to compile against the PyTorch of this interpreter, one item per line:
include directories (comma-separated), library directory, Python include directory, extension suffix,
_GLIBCXX_USE_CXX11_ABI (0/1), torch version. Exit status 1 when torch cannot be imported, or when no
include directory holds torch/extension.h (Debian's python3-torch without libtorch-dev installs the
include directories as dangling links), or when no include directory, nor the compiler's /usr/include,
holds pybind11/pybind11.h (libtorch-dev's headers include it but the package does not depend on
pybind11-dev): a build cannot compile the extension then."""
import os
import sys
import sysconfig

try:
    import torch
    import torch.utils.cpp_extension as ext
except Exception as e:  # noqa: BLE001 - any failure means "no usable torch"
    print(f"torch is not importable: {e}", file=sys.stderr)
    sys.exit(1)

includes = [p for p in ext.include_paths() if os.path.isdir(p)]
if not any(os.path.isfile(os.path.join(p, "torch", "extension.h")) for p in includes):
    print(f"torch {torch.__version__} has no C++ headers (no torch/extension.h under {ext.include_paths()}); "
          "install libtorch-dev", file=sys.stderr)
    sys.exit(1)
if not any(os.path.isfile(os.path.join(p, "pybind11", "pybind11.h")) for p in includes + ["/usr/include"]):
    print(f"torch {torch.__version__}'s headers include pybind11, which is not installed; install pybind11-dev",
          file=sys.stderr)
    sys.exit(1)
print(",".join(includes))
print(ext.library_paths()[0])
print(sysconfig.get_paths()["include"])
print(sysconfig.get_config_var("EXT_SUFFIX"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch.__version__)
