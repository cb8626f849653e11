"""Benchmarking helpers for compilers and autotuners, with the meaning of Triton's
``triton.testing.do_bench``: a callable timed with device events on the current stream, the device's
cache cleared before each timed call, times in milliseconds.

The C ABI has the same over one kernel launch (``mtiaBenchmarkKernel``) for callers without Python.
"""

import math

import torch

__all__ = ["do_bench"]

_RETURN_MODES = ("min", "max", "mean", "median", "all")
# Calls timed together to estimate one call's time, from which the counts follow.
_ESTIMATE_CALLS = 5


def _cache_buffer(device):
    """A buffer of the device's last-level cache size (``L2_cache_size`` of its properties), or
    None when the device reports none. Writing it evicts what the previous call left cached."""
    size = torch.mtia.get_device_properties(device)["L2_cache_size"]
    if size <= 0:
        return None
    return torch.empty(int(size), dtype=torch.int8, device=device)


def _clear_cache(cache):
    if cache is not None:
        cache.zero_()


def _quantiles(times, qs):
    """Linear interpolation between the two nearest ranks (``torch.quantile``'s default)."""
    ordered = sorted(times)
    last = len(ordered) - 1
    out = []
    for q in qs:
        if not 0.0 <= q <= 1.0:
            raise ValueError(f"do_bench: quantile {q} is not in [0, 1]")
        pos = q * last
        lo = math.floor(pos)
        hi = min(lo + 1, last)
        out.append(ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo))
    return out


def _summarize(times, quantiles, return_mode):
    if quantiles is not None:
        values = _quantiles(times, quantiles)
        return values[0] if len(values) == 1 else values
    if return_mode == "all":
        return times
    if return_mode == "min":
        return min(times)
    if return_mode == "max":
        return max(times)
    if return_mode == "mean":
        return sum(times) / len(times)
    # The lower of the two middle values for an even count, as torch.median (and Triton) report.
    return sorted(times)[(len(times) - 1) // 2]


def _timed_calls(fn, count, stream, cache, grad_to_none):
    """Times count calls of fn, each between its own pair of events on stream, after clearing
    grad_to_none's gradients and the cache (untimed). Synchronizes once, at the end."""
    starts = [torch.mtia.Event(enable_timing=True) for _ in range(count)]
    ends = [torch.mtia.Event(enable_timing=True) for _ in range(count)]
    for i in range(count):
        if grad_to_none is not None:
            for x in grad_to_none:
                x.grad = None
        _clear_cache(cache)
        starts[i].record(stream)
        fn()
        ends[i].record(stream)
    stream.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def do_bench(fn, warmup=25, rep=100, grad_to_none=None, quantiles=None, return_mode="mean"):
    """Times ``fn()`` on the current MTIA device and stream, in milliseconds.

    ``warmup`` and ``rep`` are budgets in milliseconds: ``fn`` is first timed over a few calls, and
    the untimed warm-up calls and timed repetitions are as many as fit in them (at least one each).
    Before each repetition, every tensor of ``grad_to_none`` has its ``.grad`` set to None and the
    device's cache is cleared by writing a buffer of its ``L2_cache_size`` bytes; neither is timed.
    Each repetition is timed with a pair of device events around ``fn()`` on the current stream.

    Returns the ``quantiles`` of the times (a list, or a number for a single quantile) when given,
    else the ``return_mode`` statistic: "min", "max", "mean" (default), "median", or "all" (the list
    of times)."""
    if return_mode not in _RETURN_MODES:
        raise ValueError(f"do_bench: return_mode {return_mode!r} is not one of {_RETURN_MODES}")
    device = torch.device("mtia", torch.mtia.current_device())
    stream = torch.mtia.current_stream()

    fn()
    stream.synchronize()
    cache = _cache_buffer(device)

    # The estimate times fn alone, as the repetitions will (the cache clearing between is not
    # counted: on the simulated device, writing a host-sized cache takes far longer than many
    # kernels, and counting it would leave most of the budget unused).
    estimate = _timed_calls(fn, _ESTIMATE_CALLS, stream, cache, None)
    # Guarded against a zero estimate (a clock coarser than the calls), which would ask for
    # unbounded counts.
    estimate_ms = max(sum(estimate) / len(estimate), 1e-6)
    n_warmup = max(1, int(warmup / estimate_ms))
    n_repeat = max(1, int(rep / estimate_ms))

    for _ in range(n_warmup):
        fn()
    times = _timed_calls(fn, n_repeat, stream, cache, grad_to_none)
    return _summarize(times, quantiles, return_mode)
