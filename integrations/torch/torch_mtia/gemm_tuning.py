"""Tuned tile and blocking configurations of the device's matrix products (issue 20, item 5).

Every torch.mm/bmm/addmm/baddbmm/addmv/mv/dot (and matmul, nn.Linear and their backwards, which
reach them) on the device is one launch of the kernel ``mtia_torch_gemm``
(kernels/matrix_kernels.cpp). How that launch cuts the product is a configuration, a dict of five
non-negative ints (all 0: the default, the behaviour before tuning existed):

- ``blocks``: the launch's block count (0: the default rule, about one block per MiB-flop of work,
  at most 16, one per engine for float16/bfloat16);
- ``split_cols``: 1 to give the blocks column panels of the outputs instead of rows;
- ``tile_m``, ``tile_n``: a block multiplies its share in tile_m x tile_n pieces (0: all at once);
- ``tile_k``: ... and in panels of depth tile_k, accumulated in float/double (0: all of k). For
  float16/bfloat16 the operands are widened to float one panel at a time, so that panels stay in
  cache; the result is still rounded once, at the store.

Every configuration computes the same products up to BLAS's order of summation (within the
tolerances the tests use); the CPU-exact paths (integers, and the small batched products summed in
order as the CPU's bmm does) give identical results under every configuration.

The choice is made per shape class: the dtype and, for m, n, k and batch, the exponent of the
smallest power of two at least that size (0 for 0 and 1), e.g. a 300 x 512 @ 512 x 64 float32 mm is
class ("float32", 9, 6, 9, 0). ``tune`` benchmarks ``CANDIDATES`` for each class of the shapes it is
given in the tuning pool (``torch_mtia.autotune``, worker processes, crash-safe), stores the
winner in the pool's disk cache and installs it; later processes install the cached choices when
the device is initialised (``load_cached``; MTIA_GEMM_TUNING=0 turns that off). A lookup costs the
products nothing when no class is tuned, and a shared lock and a map lookup otherwise.

    import torch_mtia.gemm_tuning as gt
    gt.tune([(512, 512, 512), (32, 64, 64, 64)], dtypes=(torch.float32, torch.bfloat16))
    gt.choice(torch.float32, 512, 512, 512)   # the installed config, or None (default)
"""
import os
import struct as _struct

import torch

from . import _C

__all__ = ["KERNEL", "FIELDS", "DEFAULT", "CANDIDATES", "MARGIN", "shape_class", "choice", "describe",
           "install", "installed", "clear", "load_cached", "tune", "forced", "record_shapes"]

KERNEL = "mtia_torch_gemm"
FIELDS = ("blocks", "split_cols", "tile_m", "tile_n", "tile_k")
DEFAULT = {f: 0 for f in FIELDS}


def _config(blocks=0, split_cols=0, tile_m=0, tile_n=0, tile_k=0):
    return {"blocks": blocks, "split_cols": split_cols, "tile_m": tile_m, "tile_n": tile_n,
            "tile_k": tile_k}


# The candidates, per dtype (measured on the simulated device, bench/results/gemm_tuning.md): the
# block count matters most (the default's up to 16 blocks oversubscribe a host with fewer cores than
# engines, and each block packs all of b); k panels help products with a long k and few rows, where
# OpenBLAS runs faster on pieces; column panels help short, wide outputs.
_FLOAT = [DEFAULT, _config(1), _config(2), _config(4), _config(8), _config(2, 1), _config(4, 1),
          _config(2, tile_k=256), _config(2, tile_n=256, tile_k=256),
          _config(4, tile_n=256, tile_k=256)]
_REDUCED = [DEFAULT, _config(1), _config(2), _config(4), _config(2, 1), _config(4, 1),
            _config(2, tile_k=128), _config(2, tile_n=256, tile_k=256),
            _config(4, tile_n=256, tile_k=256), _config(1, tile_n=256, tile_k=256)]
CANDIDATES = {torch.float32: _FLOAT, torch.float64: _FLOAT, torch.bfloat16: _REDUCED,
              torch.float16: _REDUCED}


def _tuple(config):
    if config is None:
        return (0,) * len(FIELDS)
    unknown = set(config) - set(FIELDS)
    if unknown:
        raise ValueError(f"gemm_tuning: unknown config fields {sorted(unknown)} (fields: {FIELDS})")
    return tuple(int(config.get(f, 0)) for f in FIELDS)


def _dict(values):
    return dict(zip(FIELDS, (int(v) for v in values)))


def shape_class(dtype, m, n, k, batch=1):
    """The shape class of a batch of m x k @ k x n products of dtype (module docstring)."""
    return tuple(_C._gemm_shape_class(dtype, int(m), int(n), int(k), int(batch)))


def choice(dtype, m, n, k, batch=1):
    """The config the products of this shape use now (a forced one, else the installed choice of
    its class), or None when that is the default."""
    config = _dict(_C._choose_gemm_config(dtype, int(m), int(n), int(k), int(batch)))
    return None if config == DEFAULT else config


def describe(config):
    """A short text for a config: "default", or e.g. "2 blocks over columns, tiles 256 x 256 x k256"."""
    if config is None or _tuple(config) == _tuple(DEFAULT):
        return "default"
    c = _dict(_tuple(config))
    parts = [f"{c['blocks']} block{'s' if c['blocks'] > 1 else ''}" if c["blocks"]
             else "default blocks"]
    parts[0] += " over columns" if c["split_cols"] else " over rows"
    if c["tile_m"] or c["tile_n"]:
        parts.append(f"tiles {c['tile_m'] or 'all'} x {c['tile_n'] or 'all'}")
    if c["tile_k"]:
        parts.append(f"k panels of {c['tile_k']}")
    return ", ".join(parts)


def installed():
    """{shape class: config} of the choice table."""
    return {tuple(cls): _dict(cfg) for cls, cfg in _C._gemm_configs()}


def install(choices):
    """Adds {shape class: config} to the choice table (replacing those classes' choices)."""
    table = installed()
    for cls, cfg in choices.items():
        table[tuple(cls)] = _dict(_tuple(cfg))
    _C._set_gemm_configs([(cls, _tuple(cfg)) for cls, cfg in table.items()])


def clear():
    """Empties the choice table: every product uses the default."""
    _C._set_gemm_configs([])


class forced:
    """Context manager: every product uses config (tests, benchmarks), the table again after."""

    def __init__(self, config):
        self.config = _tuple(config)

    def __enter__(self):
        _C._set_gemm_config_override(self.config)
        return self

    def __exit__(self, *exc):
        _C._set_gemm_config_override(None)


def _key(cls, device):
    from . import autotune
    return autotune.cache_key(KERNEL, [list(cls[1:])], [cls[0]], device)


def _index_key(device):
    # The list of classes tuned on devices like this one: the pool's cache is keyed by hash, so
    # the classes to look up at start-up are kept under a key of their own.
    from . import autotune
    return autotune.cache_key(KERNEL + ".classes", [], [], device)


def load_cached(device=0):
    """Installs every choice the disk cache holds for devices like device (its name and
    capability); returns {shape class: config} of what it installed."""
    from . import autotune
    found = {}
    for cls in autotune.cache_lookup(_index_key(device)) or []:
        cls = (str(cls[0]),) + tuple(int(x) for x in cls[1:])
        config = autotune.cache_lookup(_key(cls, device))
        if config is not None:
            try:
                _tuple(config)
            except (ValueError, TypeError, AttributeError):
                continue  # an entry of another version: tuning again replaces it
            found[cls] = config
    if found:
        install(found)
    return found


def _load_at_init():
    # Queued by torch_mtia's __init__ to run once the device is initialised (cache_key reads the
    # device's name). A broken or unreadable cache must not break initialisation: the products
    # then use the default.
    if os.environ.get("MTIA_GEMM_TUNING", "1") == "0":
        return
    try:
        load_cached(torch.mtia.current_device())
    except Exception as e:  # noqa: BLE001
        import warnings
        warnings.warn(f"torch_mtia.gemm_tuning: cached GEMM choices not loaded: {e}")


def _remember_class(cls, device):
    from . import autotune
    key = _index_key(device)
    classes = [list(c) for c in autotune.cache_lookup(key) or []]
    if list(cls) not in classes:
        autotune.cache_store(key, classes + [list(cls)], 0.0)


# A configuration replaces the default only when it is this much faster: below that the choice is
# the measurement's noise (small products, whose time is the launch's), and the default is the
# configuration every other test and benchmark exercises.
MARGIN = 0.05


def _prefer_default(key, best, results):
    from . import autotune
    default = next((r for r in results if r.ok and r.config is not None
                    and _tuple(r.config) == _tuple(DEFAULT)), None)
    if default is None or default is best or default.time_ms > best.time_ms * (1 + MARGIN):
        return best
    autotune.cache_store(key, default.config, default.time_ms)
    return default


def _normalise(shape):
    shape = tuple(int(s) for s in shape)
    if len(shape) == 3:
        return (1,) + shape
    if len(shape) == 4:
        return shape
    raise ValueError(f"gemm_tuning: a shape is (m, k, n) or (batch, m, k, n), got {shape}")


def tune(shapes, dtypes=(torch.float32, torch.bfloat16), device=0, *, pool=None, candidates=None,
         timeout_s=None):
    """For each dtype and each shape ((m, k, n) for torch.mm, (batch, m, k, n) for torch.bmm), the
    best of the candidates (CANDIDATES[dtype] unless given) for its shape class, measured in the
    tuning pool on random operands of that shape (the first shape of a class stands for it),
    stored in the disk cache and installed; the default wins unless another candidate is MARGIN
    (5%) faster. A class already in the cache is not measured again (its Result says cached).
    pool: a torch_mtia.autotune.TuningPool to use (else one on device, closed after). Returns
    {shape class: autotune.Result}."""
    from . import autotune
    module = os.path.join(os.path.dirname(__file__), "libmtia_torch_kernels.so")
    dev = torch.device("mtia", device)
    own = pool is None
    if own:
        pool = autotune.TuningPool(devices=[device])
    results = {}
    try:
        for dtype in dtypes:
            if dtype not in CANDIDATES and candidates is None:
                raise ValueError(f"gemm_tuning.tune: no candidates for {dtype} (tuned dtypes: "
                                 f"{list(CANDIDATES)})")
            for shape in shapes:
                batch, m, k, n = _normalise(shape)
                cls = shape_class(dtype, m, n, k, batch)
                if cls in results:
                    continue
                gen = torch.Generator().manual_seed(0)
                lead = (batch,) if len(tuple(shape)) == 4 else ()
                a = torch.randn(*lead, m, k, generator=gen).to(dtype).to(dev)
                b = torch.randn(*lead, k, n, generator=gen).to(dtype).to(dev)
                out = torch.empty(*lead, m, n, dtype=dtype, device=dev)
                buffers = [a, b, out]
                built = []
                for config in candidates or CANDIDATES[dtype]:
                    data, offsets, blocks = _C._gemm_params(a, b, out, _tuple(config))
                    relocations = []
                    for index, (at, t) in enumerate(zip(offsets, buffers)):
                        pointer = _struct.unpack_from("<Q", data, at)[0]
                        relocations.append((at, index, pointer - t.data_ptr()))
                    built.append(autotune.Candidate(
                        KERNEL, module=module, grid=(blocks, 1, 1),
                        args=(autotune.struct(data, relocations),), config=_dict(_tuple(config)),
                        timeout_s=timeout_s))
                key = _key(cls, device)
                best = pool.tune(key, built, buffers)
                if not best.cached:
                    best = _prefer_default(key, best, pool.last_results)
                _remember_class(cls, device)
                install({cls: best.config})
                results[cls] = best
    finally:
        if own:
            pool.close()
    return results


def record_shapes(fn):
    """Runs fn() and returns the matrix products it ran, as {(dtype, batch, m, k, n): count} (the
    aten mm/addmm/bmm/baddbmm calls, backward included): the shapes a model would tune."""
    from torch.utils._python_dispatch import TorchDispatchMode

    aten = torch.ops.aten
    matrix = {aten.mm.default, aten.addmm.default, aten.bmm.default, aten.baddbmm.default}
    seen = {}

    class Record(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            if func in matrix:
                x, y = (args[1], args[2]) if func in (aten.addmm.default,
                                                      aten.baddbmm.default) else args[:2]
                batch = x.shape[0] if x.dim() == 3 else 1
                key = (x.dtype, batch, x.shape[-2], x.shape[-1], y.shape[-1])
                seen[key] = seen.get(key, 0) + 1
            return func(*args, **(kwargs or {}))

    with Record():
        fn()
    return seen
