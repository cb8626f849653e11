"""Builds the torch_mtia wheel (pyproject.toml has the metadata; README.md says how to call pip).

CMake builds the extension, its kernel module and libmtia from this repository in a temporary folder
(or pip is handed an existing build folder in MTIA_TORCH_BUILD_DIR, CMake's or Meson's, built
already: nothing is rebuilt then); the build's own install step (component/tag torch_mtia) puts the
package into a staging folder, which gives the extension its installed run path ($ORIGIN first);
the wheel carries that package with libmtia.so.1 beside the extension. Nothing is downloaded: call
pip with --no-build-isolation (setuptools and torch come from the environment). CMAKE and MESON name
the tools (the ones that made MTIA_TORCH_BUILD_DIR: their install steps must match it)."""
import atexit
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_ext import build_ext
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
CMAKE = os.environ.get("CMAKE", "cmake")
MESON = os.environ.get("MESON", "meson")
# What the wheel needs; the rest of the project (tools, tests) is not built.
CMAKE_TARGETS = ["torch_mtia_C", "mtia_torch_kernels", "mtia", "torch_mtia_dist_info"]


def runtime_version():
    with open(os.path.join(REPO, "include", "mtia", "mtia_version.h"), encoding="utf-8") as f:
        text = f.read()
    return ".".join(re.search(rf"#define MTIA_VERSION_{part} (\d+)", text).group(1)
                    for part in ("MAJOR", "MINOR", "PATCH"))


def run(*command):
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True)


def cmake_build(build_dir):
    """Configures and builds the wheel's targets in build_dir (Release; ccache and Ninja when there)."""
    args = [CMAKE, "-S", REPO, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release", "-DMTIA_TORCH=ON",
            f"-DMTIA_TORCH_PYTHON={sys.executable}", "-DMTIA_BUILD_TESTS=OFF"]
    if shutil.which("ninja"):
        args += ["-G", "Ninja"]
    if shutil.which("ccache"):
        args += ["-DCMAKE_C_COMPILER_LAUNCHER=ccache", "-DCMAKE_CXX_COMPILER_LAUNCHER=ccache"]
    run(*args)
    run(CMAKE, "--build", build_dir, "--parallel", str(os.cpu_count() or 1), "--target", *CMAKE_TARGETS)


def stage_install(build_dir, stage):
    """The build's install step for the package only, into stage; returns the staged torch_mtia folder."""
    if os.path.isfile(os.path.join(build_dir, "CMakeCache.txt")):
        run(CMAKE, "--install", build_dir, "--prefix", stage, "--component", "torch_mtia", "--strip")
    elif os.path.isdir(os.path.join(build_dir, "meson-private")):
        run(MESON, "install", "-C", build_dir, "--no-rebuild", "--quiet",
            "--strip", "--destdir", stage, "--tags", "torch_mtia")
    else:
        sys.exit(f"MTIA_TORCH_BUILD_DIR={build_dir} is neither a CMake nor a Meson build folder")
    found = glob.glob(os.path.join(stage, "**", "torch_mtia", "__init__.py"), recursive=True)
    if len(found) != 1:
        sys.exit(f"the install step of {build_dir} staged {len(found)} torch_mtia packages: {found}")
    return os.path.dirname(found[0])


class BuildPackage(build_ext):
    """The package as the build installs it (py files, _C, kernel module) and libmtia.so.1: in
    build_ext, which setuptools runs for a distribution with compiled code (BinaryDistribution)."""

    def run(self):
        temp = self.get_finalized_command("build").build_temp
        build_dir = os.environ.get("MTIA_TORCH_BUILD_DIR")
        if build_dir:
            # pip runs this in the package's folder, not where it was called.
            if not os.path.isabs(build_dir):
                sys.exit(f"MTIA_TORCH_BUILD_DIR={build_dir}: give an absolute path")
        else:
            build_dir = os.path.join(temp, "cmake")
            cmake_build(build_dir)
        stage = os.path.join(temp, "stage")
        shutil.rmtree(stage, ignore_errors=True)
        package = stage_install(build_dir, stage)
        target = os.path.join(self.build_lib, "torch_mtia")
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(package, target)
        # Both builds make runtime/libmtia.so.1 (the soname link to the versioned file): the wheel
        # holds the file itself under the soname, which the extension's $ORIGIN run path finds.
        libmtia = os.path.join(build_dir, "runtime", "libmtia.so.1")
        if not os.path.exists(libmtia):
            sys.exit(f"{libmtia} does not exist: build the mtia target first")
        shutil.copyfile(libmtia, os.path.join(target, "libmtia.so.1"))
        # Stripped as the install step strips the package's modules (--strip): a RelWithDebInfo
        # libmtia is ~40 MB, ~1 MB without its debug information.
        if shutil.which("strip"):
            run("strip", "--strip-unneeded", os.path.join(target, "libmtia.so.1"))


class BinaryDistribution(Distribution):
    """The wheel holds compiled code that setuptools did not build: platform wheel, platlib."""

    def has_ext_modules(self):
        return True


# setuptools' build and egg-info folders go to a temporary folder, not into the source tree (pip
# builds a local folder in place).
_work = tempfile.mkdtemp(prefix="torch_mtia-build-")
atexit.register(shutil.rmtree, _work, ignore_errors=True)

setup(
    version=runtime_version(),
    packages=[],  # BuildPackage stages the whole package; setuptools' own discovery stays out
    distclass=BinaryDistribution,
    cmdclass={"build_ext": BuildPackage},
    options={"build": {"build_base": os.path.join(_work, "build")},
             "egg_info": {"egg_base": _work}},
    zip_safe=False,
)
