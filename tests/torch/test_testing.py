"""torch_mtia.testing.do_bench: device-event times of the builtin sleep kernel agree with a host-timed
loop, quantiles and return modes, gradients cleared, the cache buffer written before each repetition.
Runs with MTIA_SIM_L2_CACHE=4MiB (CMakeLists.txt / meson.build) so that clearing the cache is quick."""
import time

import pytest
import torch

import torch_mtia
from torch_mtia import testing

SLEEP_US = 2000


def sleep():
    torch_mtia._C.sleep_on_stream(SLEEP_US)


def host_timed_ms(n):
    stream = torch.mtia.current_stream()
    sleep()
    stream.synchronize()
    start = time.perf_counter()
    for _ in range(n):
        sleep()
    stream.synchronize()
    return (time.perf_counter() - start) * 1000.0 / n


def test_agrees_with_a_host_timed_loop():
    # A correctness check of the timing path, not a performance assertion: back-to-back launches on
    # one stream cost the host loop only the kernels, which is what each event pair brackets.
    # A busy machine can stretch either measurement once; a wrong timing path is off every time.
    tries = []
    for _ in range(3):
        host = host_timed_ms(20)
        bench = testing.do_bench(sleep, warmup=4, rep=40)
        assert bench >= SLEEP_US / 1000.0 * 0.999
        tries.append((bench, host))
        if abs(bench - host) <= 0.10 * host:
            return
    pytest.fail(f"do_bench and the host-timed loop disagree by more than 10%: {tries}")


def test_return_modes_and_quantiles(monkeypatch):
    times = testing.do_bench(sleep, warmup=2, rep=20, return_mode="all")
    assert isinstance(times, list) and len(times) >= 5
    assert all(t >= SLEEP_US / 1000.0 * 0.999 for t in times)
    # Each mode summarizes the repetitions' own times (the last timed batch of the call).
    batches = []
    original = testing._timed_calls

    def spy(*args):
        batches.append(original(*args))
        return batches[-1]

    monkeypatch.setattr(testing, "_timed_calls", spy)
    reducers = {
        "min": min,
        "max": max,
        "mean": lambda t: sum(t) / len(t),
        "median": lambda t: sorted(t)[(len(t) - 1) // 2],
    }
    for mode, reduce in reducers.items():
        got = testing.do_bench(sleep, warmup=1, rep=10, return_mode=mode)
        assert got == pytest.approx(reduce(batches[-1])), mode
    q = testing.do_bench(sleep, warmup=1, rep=10, quantiles=[0.0, 0.5, 1.0])
    assert q == pytest.approx([min(batches[-1]), testing._quantiles(batches[-1], [0.5])[0], max(batches[-1])])
    assert isinstance(testing.do_bench(sleep, warmup=1, rep=4, quantiles=[0.2]), float)
    with pytest.raises(ValueError, match="return_mode"):
        testing.do_bench(sleep, return_mode="average")


def test_statistics_on_known_times():
    times = [4.0, 1.0, 3.0, 2.0]
    assert testing._summarize(times, None, "min") == 1.0
    assert testing._summarize(times, None, "max") == 4.0
    assert testing._summarize(times, None, "mean") == 2.5
    assert testing._summarize(times, None, "median") == 2.0  # the lower middle, as torch.median
    assert testing._summarize(times, None, "all") is times
    expected = torch.quantile(torch.tensor(times), torch.tensor([0.1, 0.5, 0.75])).tolist()
    assert testing._summarize(times, [0.1, 0.5, 0.75], "mean") == pytest.approx(expected)
    assert testing._summarize(times, [0.5], "mean") == pytest.approx(2.5)
    with pytest.raises(ValueError, match="quantile"):
        testing._summarize(times, [1.5], "mean")


def test_grad_to_none_and_the_cache_buffer(monkeypatch):
    buffers = []
    original = testing._cache_buffer

    def spy(device):
        buf = original(device)
        buf.fill_(1)
        buffers.append(buf)
        return buf

    monkeypatch.setattr(testing, "_cache_buffer", spy)
    clears = []
    original_clear = testing._clear_cache
    monkeypatch.setattr(testing, "_clear_cache", lambda c: (clears.append(c), original_clear(c)))
    w = torch.ones(4, device="mtia", requires_grad=True)
    w.grad = torch.ones(4, device="mtia")
    times = testing.do_bench(sleep, warmup=1, rep=10, grad_to_none=[w], return_mode="all")
    assert w.grad is None
    (buf,) = buffers
    assert buf.numel() == torch.mtia.get_device_properties(0)["L2_cache_size"] == 4 << 20
    assert buf.dtype == torch.int8 and buf.device.type == "mtia"
    assert bool((buf == 0).all())  # written (zeroed) by the clears
    # One clear before each estimate call and each repetition, always of that buffer.
    assert len(clears) == testing._ESTIMATE_CALLS + len(times)
    assert all(c is buf for c in clears)
