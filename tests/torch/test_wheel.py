"""The torch_mtia wheel in a fresh virtual environment.

The wheel is built with pip from integrations/torch (setup.py) out of this build folder
(MTIA_TORCH_BUILD_DIR: the build's own install step stages the package, nothing is compiled again) and
installed offline into a new venv that sees the test interpreter's site-packages (torch 2.13, pip; not a
torch_mtia installed there) through a .pth file, so torch is not installed twice. There `import torch` alone must bring the mtia device
(PyTorch's device-backend autoload through the wheel's torch.backends entry point), from the wheel's
files and its own libmtia.so.1, and TORCH_DEVICE_BACKEND_AUTOLOAD=0 must turn the autoload off.
"""
import ast
import os
import subprocess
import sys
import sysconfig
import zipfile

import pytest

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "integrations", "torch")
BUILD_DIR = os.environ.get("MTIA_TORCH_BUILD_DIR")
# The sanitizer runtime the build's tests preload (sanitizer builds): only for the interpreter that
# loads the wheel's instrumented libraries, not for pip or the compilers it may start.
PRELOAD = os.environ.get("LD_PRELOAD")


def clean_env(**extra):
    """The test's environment without the build tree (on sys.path, on the library path: meson test puts
    it there, and it would win over the extension's run path) and without the preload."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "LD_LIBRARY_PATH", "LD_PRELOAD")}
    env.update(PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_CACHE_DIR="1", PIP_NO_INPUT="1")
    env.update(extra)
    return env


def run(command, env, cwd):
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, f"{command} exited with {done.returncode}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


@pytest.fixture(scope="module")
def wheel(tmp_path_factory):
    assert BUILD_DIR and os.path.isabs(BUILD_DIR), "MTIA_TORCH_BUILD_DIR names the build folder"
    out = tmp_path_factory.mktemp("wheel")
    run([sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
         "-w", str(out), SOURCE], clean_env(), cwd=str(out))
    wheels = list(out.glob("torch_mtia-*.whl"))
    assert len(wheels) == 1, wheels
    return wheels[0]


def outer_view(root):
    """A folder of links to every entry of the test interpreter's site-packages (torch 2.13, pip...)
    but torch_mtia's, should that be installed there: the venv must see only the wheel's."""
    view = root / "outer-site-packages"
    view.mkdir()
    for site in sorted({sysconfig.get_path("purelib"), sysconfig.get_path("platlib")}):
        for name in os.listdir(site):
            if "torch_mtia" not in name and not (view / name).exists():
                os.symlink(os.path.join(site, name), view / name)
    return view


@pytest.fixture(scope="module")
def venv(wheel, tmp_path_factory):
    """A fresh venv holding only the wheel; torch (and pip) come from the test interpreter's
    site-packages, through a .pth file."""
    work = tmp_path_factory.mktemp("venv")
    root = work / "venv"
    run([sys.executable, "-m", "venv", "--without-pip", str(root)], clean_env(), cwd=str(work))
    python = str(root / "bin" / "python")
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_path('platlib'))"], clean_env(),
               cwd=str(work)).strip()
    with open(os.path.join(site, "outer-site-packages.pth"), "w", encoding="utf-8") as f:
        f.write(f"{outer_view(work)}\n")
    run([python, "-m", "pip", "install", "--no-deps", "--no-index", str(wheel)], clean_env(), cwd=str(work))
    return python, site


def in_venv(venv, code, **env):
    python, site = venv
    extra = {"LD_PRELOAD": PRELOAD} if PRELOAD else {}
    return run([python, "-c", code], clean_env(**extra, **env), cwd=os.path.dirname(site))


def test_the_wheel_carries_the_package_its_libraries_and_the_entry_point(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        dist_info = next(n.split("/")[0] for n in names if n.endswith(".dist-info/METADATA"))
        entry_points = z.read(f"{dist_info}/entry_points.txt").decode()
        metadata = z.read(f"{dist_info}/METADATA").decode()
    ext = "torch_mtia/_C" + sysconfig.get_config_var("EXT_SUFFIX")
    for name in ("__init__.py", "memory.py", "_graphs.py", "libmtia_torch_kernels.so",
                 "libmtia.so.1"):
        assert f"torch_mtia/{name}" in names, sorted(names)
    assert ext in names, sorted(names)
    assert "[torch.backends]\nmtia = torch_mtia:_autoload" in entry_points
    assert "Requires-Dist: torch==2.13.*" in metadata.splitlines()


def test_the_installed_extension_finds_the_wheels_libmtia(venv):
    _, site = venv
    package = os.path.join(site, "torch_mtia")
    ext = os.path.join(package, "_C" + sysconfig.get_config_var("EXT_SUFFIX"))
    dynamic = run(["readelf", "-d", ext], clean_env(), cwd=package)
    runpath = next(line for line in dynamic.splitlines() if "RUNPATH" in line or "RPATH" in line)
    assert "[$ORIGIN:" in runpath, runpath
    libs = run(["ldd", ext], clean_env(), cwd=package)
    libmtia = next(line for line in libs.splitlines() if "libmtia.so.1" in line)
    assert f"=> {package}/libmtia.so.1 " in libmtia, libs


def test_import_torch_alone_brings_the_mtia_device(venv):
    out = in_venv(venv, "import torch; x = torch.ones(4, device='mtia'); print(x.device, torch.mtia.memory_stats())")
    device, stats = out.strip().split(" ", 1)
    assert device == "mtia:0"
    stats = ast.literal_eval(stats)
    assert stats["allocated_bytes"]["all"]["current"] >= 4 * 4
    assert stats["num_device_alloc"] >= 1


def test_the_autoloaded_package_and_libmtia_are_the_wheels(venv):
    _, site = venv
    out = in_venv(venv, "import sys, torch; torch.mtia.init(); "
                        "print(sys.modules['torch_mtia'].__file__); "
                        "print(*sorted({l.split()[-1] for l in open('/proc/self/maps') if 'libmtia.so' in l}))")
    package, libmtia = out.split()
    assert package == os.path.join(site, "torch_mtia", "__init__.py")
    assert os.path.realpath(libmtia) == os.path.realpath(os.path.join(site, "torch_mtia", "libmtia.so.1"))


def test_autoload_off_leaves_the_device_to_an_explicit_import(venv):
    out = in_venv(venv, "import sys, torch\n"
                        "print('torch_mtia' in sys.modules, torch.mtia.is_available())\n"
                        "import torch_mtia\n"
                        "print(torch.ones(2, device='mtia').device)",
                  TORCH_DEVICE_BACKEND_AUTOLOAD="0")
    assert out.split() == ["False", "False", "mtia:0"]
