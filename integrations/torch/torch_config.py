"""Prints what a build needs to compile against the PyTorch of this interpreter, one item per line:
include directories (comma-separated), library directory, Python include directory, extension suffix,
_GLIBCXX_USE_CXX11_ABI (0/1), torch version. Exit status 1 when torch cannot be imported."""
import os
import sys
import sysconfig

try:
    import torch
    import torch.utils.cpp_extension as ext
except Exception as e:  # noqa: BLE001 - any failure means "no usable torch"
    print(f"torch is not importable: {e}", file=sys.stderr)
    sys.exit(1)

print(",".join(p for p in ext.include_paths() if os.path.isdir(p)))
print(ext.library_paths()[0])
print(sysconfig.get_paths()["include"])
print(sysconfig.get_config_var("EXT_SUFFIX"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch.__version__)
