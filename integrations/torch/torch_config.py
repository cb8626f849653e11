"""Prints what a build needs to compile against the PyTorch of this interpreter, one item per line:
include directories (comma-separated), library directory, Python include directory, extension suffix,
_GLIBCXX_USE_CXX11_ABI (0/1), torch version, the site-packages folder relative to the interpreter's
prefix (where both builds install the package under theirs, e.g. lib/python3.11/site-packages). Exit status 1 when torch cannot be imported, when it is
not PyTorch 2.13 (the release the backend is written against: its MTIAHooksInterface), or when no
include directory holds torch/extension.h: a build cannot compile the extension then."""
import os
import sys
import sysconfig

REQUIRED = (2, 13)

try:
    import torch
    import torch.utils.cpp_extension as ext
except Exception as e:  # noqa: BLE001 - any failure means "no usable torch"
    print(f"torch is not importable: {e}", file=sys.stderr)
    sys.exit(1)

version = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
if version != REQUIRED:
    print(f"torch {torch.__version__} is not PyTorch {REQUIRED[0]}.{REQUIRED[1]} "
          f"(scripts/install-deps.sh installs torch=={REQUIRED[0]}.{REQUIRED[1]}.0 into .venv)", file=sys.stderr)
    sys.exit(1)
includes = [p for p in ext.include_paths() if os.path.isdir(p)]
if not any(os.path.isfile(os.path.join(p, "torch", "extension.h")) for p in includes):
    print(f"torch {torch.__version__} has no C++ headers (no torch/extension.h under {ext.include_paths()})",
          file=sys.stderr)
    sys.exit(1)
print(",".join(includes))
print(ext.library_paths()[0])
print(sysconfig.get_paths()["include"])
print(sysconfig.get_config_var("EXT_SUFFIX"))
print(int(torch._C._GLIBCXX_USE_CXX11_ABI))
print(torch.__version__)
print(os.path.relpath(sysconfig.get_path("platlib"), sysconfig.get_config_var("platbase")))
