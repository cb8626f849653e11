"""The device GEMM's tuned configurations (torch_mtia.gemm_tuning, csrc/gemm_configs.cpp,
kernels/matrix_kernels.cpp): every candidate configuration (and some with odd tiles) computes what
the default does, within the matrix tests' tolerances, for odd, transposed, strided, batched,
in-place and out= products of every dtype the kernel takes, and exactly where the device reproduces
the CPU's roundings (integers, small batched products); the choice table answers by shape class;
_gemm_params packs what the operators launch; tuning through the pool stores, installs and, in a
second process, reloads its choices."""
import ctypes
import json
import os
import struct
import subprocess
import sys

import pytest
import torch

import torch_mtia
import torch_mtia.gemm_tuning as gt
from torch_mtia import autotune

DEV = torch.device("mtia", 0)


def quick_pool():
    """A pool that measures little (the tests check what tuning does, not which config wins): no
    cache flush (a memset of the device's cache size per repetition)."""
    return autotune.TuningPool(devices=[0], warmup=1, repetitions=2, flush_cache=False)
FLOATS = [torch.float32, torch.float64, torch.float16, torch.bfloat16]
INTS = [torch.int64, torch.int32, torch.int8, torch.uint8]
# As test_matrix.py: float32 sums of hundreds of products differ in the last places of the terms;
# float16/bfloat16 round once, so orders of summation move a result by at most about an ulp (and
# near zero, by the float error of the terms).
TOL = {torch.float32: dict(atol=1e-4, rtol=1e-5), torch.float64: {},
       torch.float16: dict(atol=2e-3, rtol=1e-3), torch.bfloat16: dict(atol=2e-3, rtol=1.6e-2)}


def configs():
    seen, out = set(), []
    for cands in gt.CANDIDATES.values():
        for c in cands:
            if gt._tuple(c) not in seen:
                seen.add(gt._tuple(c))
                out.append(c)
    # Tiles that leave ragged edges everywhere, more blocks than rows or columns, one block.
    out.append(gt._config(3, 1, 5, 7, 11))
    out.append(gt._config(1, 0, 1, 1, 1))
    out.append(gt._config(64, 0, 0, 0, 3))
    return out


def rand(*shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, generator=g)
    return x.to(dtype) if dtype.is_floating_point else (x * 10).to(dtype)


def cases(dtype):
    """(name, fn on device tensors) pairs; fn returns the product."""
    a, b = rand(37, 300, dtype=dtype, seed=1), rand(300, 29, dtype=dtype, seed=2)
    w, z = rand(9, 270, dtype=dtype, seed=3), rand(270, 300, dtype=dtype, seed=10)
    s = rand(29, dtype=dtype, seed=4)
    x, y = rand(5, 17, 23, dtype=dtype, seed=5), rand(5, 23, 19, dtype=dtype, seed=6)
    sx, sy = rand(3, 3, 4, dtype=dtype, seed=7), rand(3, 4, 5, dtype=dtype, seed=8)
    v = rand(300, dtype=dtype, seed=9)
    d = {k: t.to(DEV) for k, t in dict(a=a, b=b, w=w, z=z, s=s, x=x, y=y, sx=sx, sy=sy, v=v).items()}
    scale = dict(beta=3, alpha=-2) if not dtype.is_floating_point else dict(beta=0.5, alpha=1.5)

    def out_colmajor():
        out = torch.empty(29, 37, dtype=dtype, device=DEV).t()
        return torch.mm(d["a"], d["b"], out=out)

    def inplace():
        c = torch.mm(d["a"], d["b"])
        return c.addmm_(d["a"], d["b"], **scale)

    return [
        ("mm", lambda: torch.mm(d["a"], d["b"])),
        ("transposed", lambda: torch.mm(d["b"].t(), d["a"].t())),
        ("leading dims", lambda: torch.mm(d["a"][3:30, 7:290], d["b"][7:290, 2:27])),
        ("wide", lambda: torch.mm(d["w"], d["z"])),
        ("addmm broadcast self", lambda: torch.addmm(d["s"], d["a"], d["b"], **scale)),
        ("addmm_ in place", inplace),
        ("out column-major", out_colmajor),
        ("bmm", lambda: torch.bmm(d["x"], d["y"])),
        ("baddbmm", lambda: torch.baddbmm(torch.bmm(d["x"], d["y"]), d["x"], d["y"], **scale)),
        ("small bmm (in order)", lambda: torch.bmm(d["sx"], d["sy"])),
        ("mv", lambda: torch.mv(d["a"], d["v"])),
        ("dot", lambda: torch.dot(d["v"], d["v"])),
        ("k == 0", lambda: torch.addmm(d["s"], d["a"][:, :0], d["b"][:0], **scale)),
    ]


@pytest.fixture(scope="module")
def defaults():
    """Each dtype's case results under the default configuration."""
    gt.clear()
    with gt.forced(gt.DEFAULT):
        return {dtype: [fn().cpu() for _, fn in cases(dtype)] for dtype in FLOATS + INTS}


@pytest.mark.parametrize("config", configs(), ids=lambda c: "-".join(str(v) for v in gt._tuple(c)))
def test_every_config_computes_the_default(config, defaults):
    for dtype in FLOATS + INTS:
        named = cases(dtype)
        with gt.forced(config):
            got = [fn().cpu() for _, fn in named]
        for (name, _), g, ref in zip(named, got, defaults[dtype]):
            exact = not dtype.is_floating_point or name == "small bmm (in order)"
            if exact:
                assert torch.equal(g, ref), (dtype, name)
            else:
                torch.testing.assert_close(g, ref, **TOL[dtype], msg=lambda m: f"{dtype} {name}: {m}")


def test_default_config_is_the_previous_behaviour():
    # The CPU-equal bfloat16 addmm of test_matrix.py stays equal under the default.
    gt.clear()
    a, b, s = (rand(64, 96, dtype=torch.bfloat16, seed=15), rand(96, 80, dtype=torch.bfloat16, seed=16),
               rand(80, dtype=torch.bfloat16, seed=17))
    assert gt.choice(torch.bfloat16, 64, 80, 96) is None
    assert torch.equal(torch.addmm(s.to(DEV), a.to(DEV), b.to(DEV), beta=0.7, alpha=1.3).cpu(),
                       torch.addmm(s, a, b, beta=0.7, alpha=1.3))


def test_choice_table_by_shape_class():
    gt.clear()
    cfg = gt._config(2, tile_k=256)
    cls = gt.shape_class(torch.float32, 300, 64, 512)
    assert cls == ("float32", 9, 6, 9, 0)
    gt.install({cls: cfg})
    try:
        assert gt.installed() == {cls: cfg}
        # Any shape of the class gets it: m in (256, 512], n in (32, 64], k in (256, 512].
        assert gt.choice(torch.float32, 300, 64, 512) == cfg
        assert gt.choice(torch.float32, 257, 33, 500) == cfg
        # Other classes and dtypes keep the default.
        assert gt.choice(torch.float32, 256, 64, 512) is None
        assert gt.choice(torch.float32, 300, 64, 512, batch=2) is None
        assert gt.choice(torch.bfloat16, 300, 64, 512) is None
        with gt.forced(gt._config(4)):
            assert gt.choice(torch.bfloat16, 3, 3, 3) == gt._config(4)
        assert gt.choice(torch.float32, 300, 64, 512) == cfg
        # A product of that class runs under it and computes what the CPU does.
        a, b = rand(300, 512, dtype=torch.float32, seed=1), rand(512, 64, dtype=torch.float32, seed=2)
        torch.testing.assert_close(torch.mm(a.to(DEV), b.to(DEV)).cpu(), a @ b, **TOL[torch.float32])
    finally:
        gt.clear()
    assert gt.installed() == {} and gt.choice(torch.float32, 300, 64, 512) is None
    assert gt.shape_class(torch.bfloat16, 1, 0, 2, 1024) == ("bfloat16", 0, 0, 1, 10)


def test_bad_tables_and_configs_refused():
    gt.clear()
    with pytest.raises(RuntimeError, match="unknown dtype 'complex64'"):
        torch_mtia._C._set_gemm_configs([(("complex64", 1, 1, 1, 0), (0, 0, 0, 0, 0))])
    with pytest.raises(RuntimeError, match="tile_k must be >= 0, got -1"):
        torch_mtia._C._set_gemm_configs([(("float32", 1, 1, 1, 0), (0, 0, 0, 0, -1))])
    with pytest.raises(RuntimeError, match="split_cols must be 0 or 1"):
        torch_mtia._C._set_gemm_config_override((0, 2, 0, 0, 0))
    with pytest.raises(ValueError, match="unknown config fields"):
        gt.install({("float32", 1, 1, 1, 0): {"blocks": 1, "tiles": 3}})
    assert gt.installed() == {}


class MatrixArg(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64), ("batchStride", ctypes.c_int64),
                ("rowStride", ctypes.c_int64), ("colStride", ctypes.c_int64)]


class Gemm(ctypes.Structure):  # kernels/matrix_params.h
    _fields_ = [("dtype", ctypes.c_int32), ("useSelf", ctypes.c_int32),
                ("selfIsOut", ctypes.c_int32), ("sequential", ctypes.c_int32),
                ("batch", ctypes.c_int64), ("m", ctypes.c_int64), ("n", ctypes.c_int64),
                ("k", ctypes.c_int64), ("alpha", ctypes.c_double), ("beta", ctypes.c_double),
                ("ialpha", ctypes.c_int64), ("ibeta", ctypes.c_int64), ("a", MatrixArg),
                ("b", MatrixArg), ("self", MatrixArg), ("out", MatrixArg),
                ("splitCols", ctypes.c_int32), ("tileM", ctypes.c_int32),
                ("tileN", ctypes.c_int32), ("tileK", ctypes.c_int32)]


def test_gemm_params_pack_what_the_operators_launch():
    a = torch.randn(4, 30, 20, device=DEV)
    b = torch.randn(4, 40, 20, device=DEV).transpose(1, 2)
    out = torch.empty(4, 30, 40, device=DEV)
    data, offsets, blocks = torch_mtia._C._gemm_params(a, b, out, (3, 1, 8, 16, 5))
    assert len(data) == ctypes.sizeof(Gemm) and blocks == 3
    p = Gemm.from_buffer_copy(data)
    assert (p.batch, p.m, p.n, p.k, p.alpha, p.useSelf) == (4, 30, 40, 20, 1.0, 0)
    assert (p.splitCols, p.tileM, p.tileN, p.tileK) == (1, 8, 16, 5)
    assert (p.b.rowStride, p.b.colStride, p.b.batchStride) == b.stride()[1:] + b.stride()[:1]
    assert [struct.unpack_from("<Q", data, at)[0] for at in offsets] == \
        [a.data_ptr(), b.data_ptr(), out.data_ptr()]
    # The default rule's block count, capped by the work (1 block for a tiny product).
    tiny = [torch.randn(1, *s, device=DEV) for s in ((2, 3), (3, 2), (2, 2))]
    assert torch_mtia._C._gemm_params(*tiny, (0, 0, 0, 0, 0))[2] == 1
    with pytest.raises(RuntimeError, match="a has no unit stride"):
        torch_mtia._C._gemm_params(a[:, :, ::2], b[:, :10], out, (0, 0, 0, 0, 0))
    with pytest.raises(RuntimeError, match="overlap neither"):
        sq = torch.randn(30, 30, device=DEV)
        torch_mtia._C._gemm_params(sq, sq, sq, (0, 0, 0, 0, 0))
    with pytest.raises(RuntimeError, match="split_cols must be 0 or 1"):
        torch_mtia._C._gemm_params(a, b, out, (0, 5, 0, 0, 0))


def test_tune_stores_installs_and_reloads(tmp_path, monkeypatch):
    monkeypatch.setenv("MTIA_AUTOTUNE_CACHE_DIR", str(tmp_path))
    gt.clear()
    candidates = [gt.DEFAULT, gt._config(1), gt._config(2, tile_k=128), gt._config(2, 1, 0, 16, 0)]
    try:
        with quick_pool() as pool:
            results = gt.tune([(40, 300, 24), (3, 20, 30, 40)],
                              dtypes=(torch.float32, torch.bfloat16), candidates=candidates,
                              timeout_s=30, pool=pool)
        classes = {gt.shape_class(torch.float32, 40, 24, 300), gt.shape_class(torch.float32, 20, 40, 30, 3),
                   gt.shape_class(torch.bfloat16, 40, 24, 300),
                   gt.shape_class(torch.bfloat16, 20, 40, 30, 3)}
        assert set(results) == classes
        for cls, r in results.items():
            assert r.ok and not r.cached and r.time_ms > 0 and r.config in candidates, (cls, r)
        assert gt.installed() == {cls: r.config for cls, r in results.items()}
        for cls, r in results.items():
            dtype = getattr(torch, cls[0])
            m, n, k = (40, 24, 300) if cls[4] == 0 else (20, 40, 30)
            assert gt.choice(dtype, m, n, k, 1 if cls[4] == 0 else 3) == (
                None if r.config == gt.DEFAULT else r.config)
        # Tuning again reads the cache instead of measuring.
        again = gt.tune([(40, 300, 24)], dtypes=(torch.float32,), candidates=candidates)
        (r,) = again.values()
        assert r.cached and r.config == results[gt.shape_class(torch.float32, 40, 24, 300)].config
        # A new process installs the cached choices when its device starts.
        code = ("import json, torch, torch_mtia, torch_mtia.gemm_tuning as gt\n"
                "torch.mtia.init()\n"
                "print(json.dumps(sorted([list(c), v] for c, v in gt.installed().items())))\n")
        env = dict(os.environ, MTIA_AUTOTUNE_CACHE_DIR=str(tmp_path))
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                             check=True, timeout=120).stdout
        expected = sorted([list(c), r.config] for c, r in results.items())
        assert json.loads(out.splitlines()[-1]) == expected
        # MTIA_GEMM_TUNING=0: what the device's initialisation runs installs nothing (in this
        # process: a second interpreter costs seconds, tens of them under TSan).
        gt.clear()
        monkeypatch.setenv("MTIA_GEMM_TUNING", "0")
        gt._load_at_init()
        assert gt.installed() == {}
        monkeypatch.setenv("MTIA_GEMM_TUNING", "1")
        gt._load_at_init()
        assert gt.installed() == {cls: r.config for cls, r in results.items()}
    finally:
        gt.clear()


def test_demo_tunes_its_shapes_then_reads_them_from_the_cache(tmp_path, monkeypatch, capsys):
    from torch_mtia import demo

    monkeypatch.setenv("MTIA_AUTOTUNE_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(gt, "CANDIDATES", {torch.float32: [gt.DEFAULT, gt._config(1)]})
    gt.clear()
    tune = gt.tune
    with quick_pool() as pool:
        monkeypatch.setattr(gt, "tune", lambda *a, **k: tune(*a, pool=pool, **k))
        try:
            demo.gemm_choices(DEV, tune=True)
            first = capsys.readouterr().out.splitlines()
            demo.gemm_choices(DEV, tune=True)
            second = capsys.readouterr().out.splitlines()
        finally:
            gt.clear()
    shapes = [line for line in first if line.startswith("  float32 ")]
    assert shapes and all("(tuned now, " in line for line in shapes), first
    again = [line for line in second if line.startswith("  float32 ")]
    assert len(again) == len(shapes) and all("(tuned, from the cache)" in line for line in again), second
    # What each line names is what the table holds.
    assert all(("default (" in line) == ("1 block over rows" not in line) for line in again), again
