"""Every method of torch_mtia's MTIAHooks (csrc/hooks.h) called through PyTorch, not through
torch_mtia._C: torch.mtia's functions (torch._C._mtia_*), torch.accelerator, torch.Generator,
pin_memory/is_pinned, torch.mtia.MTIAGraph, and the autograd engine. showConfig and
getDeviceFromPtr have no PyTorch 2.13 path from Python (torch.__config__.show() does not ask the MTIA
hooks; tensors from pointers need DLPack or array interfaces that know no MTIA)."""
import gc

import pytest
import torch

import torch_mtia

DEV = torch.device("mtia", 0)


def test_init_is_built_has_mtia_and_available():
    torch.mtia.init()  # init (lazyInitDevice)
    assert torch.mtia.is_initialized()
    assert torch.mtia._is_compiled()  # isBuilt
    assert torch.accelerator.current_accelerator() == torch.device("mtia")  # hasMTIA (at::getAccelerator)
    assert torch.mtia.is_available() and torch.accelerator.is_available()


def test_device_count_current_set_and_exchange():
    count = torch.mtia.device_count()  # getDeviceCount
    assert count >= 1 and torch.accelerator.device_count() == count
    assert torch.mtia.current_device() == 0  # getCurrentDevice
    assert torch.mtia._exchange_device(0) == 0  # exchangeDevice
    with torch.mtia.device(count - 1):  # maybeExchangeDevice, twice
        assert torch.mtia.current_device() == count - 1
    assert torch.mtia.current_device() == 0
    torch.mtia.set_device(count - 1)  # setCurrentDevice
    try:
        assert torch.mtia.current_device() == count - 1
    finally:
        torch.mtia.set_device(0)
    with pytest.raises(RuntimeError, match="mtiaSetDevice"):
        torch.mtia.set_device(count + 5)


def test_device_synchronize():
    s = torch.Stream(device=DEV)
    with torch.mtia.stream(s):
        torch_mtia._C.sleep_on_stream(100_000)
    torch.mtia.synchronize()  # deviceSynchronize
    assert s.query()


def test_capability_and_properties():
    props = torch.mtia.get_device_properties(DEV)  # getDeviceProperties
    assert props["total_memory"] > 0 and props["name"]
    cap = torch.mtia.get_device_capability(DEV)  # getDeviceCapability
    assert cap == (props["major"], props["minor"])
    assert torch.mtia.is_bf16_supported()
    # The kernel limits and the cache size compilers read (the simulated device's defaults, the
    # host's last-level cache).
    assert props["max_kernel_args"] == 32 and props["max_kernel_buffers"] == 32
    assert props["max_kernel_arg_bytes"] == 4096 and props["L2_cache_size"] > 0


def test_streams():
    default = torch.mtia.default_stream()  # getDefaultStream
    assert torch.mtia.current_stream() == default  # getCurrentStream
    assert torch._C._mtia_getCurrentRawStream(0) == default.stream_id  # getCurrentRawStream
    s = torch.Stream(device=DEV)
    torch.mtia.set_stream(s)  # setCurrentStream
    try:
        assert torch.mtia.current_stream() == s
        assert torch._C._mtia_getCurrentRawStream(0) == s.stream_id
    finally:
        torch.mtia.set_stream(default)


def test_pinned_memory():
    x = torch.arange(16.0)
    assert not x.is_pinned()  # isPinnedPtr of pageable memory
    p = x.pin_memory()  # getPinnedMemoryAllocator (the current accelerator's)
    assert p.is_pinned() and torch.equal(p, x)  # isPinnedPtr
    assert torch.empty(4, pin_memory=True).is_pinned()
    y = p.to(DEV, non_blocking=True)
    assert torch.equal(y.cpu(), x)


def test_memory_stats_reset_and_empty_cache():
    x = torch.empty(1 << 18, device=DEV)
    stats = torch.mtia.memory_stats(DEV)  # memoryStats
    assert stats["dram"]["allocated_bytes"] >= 1 << 20
    del x
    torch.mtia.reset_peak_memory_stats(DEV)  # resetPeakMemoryStats
    assert torch.mtia.max_memory_allocated() == torch.mtia.memory_allocated()
    reserved = torch.mtia.memory_stats()["dram"]["reserved_bytes"]
    torch.mtia.empty_cache()  # emptyCache
    assert torch.mtia.memory_stats()["dram"]["reserved_bytes"] < reserved or reserved == 0


def test_memory_history_and_snapshot(tmp_path):
    torch.mtia.record_memory_history("all", "python", 0)  # recordMemoryHistory
    try:
        keep = torch.empty(1 << 12, device=DEV)
        snap = torch.mtia.snapshot()  # memorySnapshot
        assert any(e["action"] == "alloc" for t in snap["device_traces"] for e in t)
        del keep
    finally:
        torch.mtia.record_memory_history(None)


def test_out_of_memory_observer_is_accepted():
    # The observer's call is tested in test_oom.py (a small device); here attaching it.
    torch.mtia.attach_out_of_memory_observer(lambda *args: None)  # attachOutOfMemoryObserver
    with pytest.raises(TypeError):  # refused by PyTorch's binding before the hook
        torch.mtia.attach_out_of_memory_observer(42)


def test_generators():
    g = torch.Generator(device=DEV)  # getNewGenerator
    assert g.device == DEV and g.initial_seed() == 67280421310721
    g.manual_seed(5)
    state = g.get_state()
    g2 = torch.Generator(device="mtia")
    g2.set_state(state)
    assert g2.initial_seed() == 5
    torch.mtia.manual_seed(1234)  # the default generator
    assert torch.mtia.initial_seed() == 1234
    before = torch.mtia.get_rng_state()
    torch.mtia.set_rng_state(before)
    assert torch.equal(torch.mtia.get_rng_state(), before)
    torch.manual_seed(77)  # torch.manual_seed seeds MTIA too
    assert torch.mtia.initial_seed() == 77
    assert all(gen.device.type == "mtia" for gen in torch.mtia.default_generators)
    with pytest.raises(RuntimeError, match="has 16 bytes, got 3"):
        g2.set_state(torch.zeros(3, dtype=torch.uint8))
    with pytest.raises(RuntimeError, match="contiguous CPU uint8"):
        g2.set_state(torch.zeros(16, dtype=torch.int32))
    assert g2.initial_seed() == 5  # a refused state changes nothing


def test_graph_hooks():
    gc.collect()
    live = torch_mtia._C._live_graphs()
    pool = torch.mtia.graph_pool_handle()  # graphPoolHandle
    assert pool != (0, 0)
    x = torch.ones(8, device=DEV)
    g = torch.mtia.MTIAGraph(keep_graph=True)  # mtiagraphCreate
    torch.mtia.synchronize()
    g.capture_begin(pool)  # mtiagraphCaptureBegin
    y = x * 3
    g.capture_end()  # mtiagraphCaptureEnd
    g.instantiate()  # mtiagraphInstantiate
    assert g.pool() == pool  # mtiagraphPool
    x.fill_(2.0)
    g.replay()  # mtiagraphReplay
    assert torch.equal(y.cpu(), torch.full((8,), 6.0))
    g.reset()  # mtiagraphReset
    del g  # mtiagraphDestroy (torch_mtia ties it to collection)
    gc.collect()
    assert torch_mtia._C._live_graphs() == live


def test_primary_context_through_the_autograd_engine():
    # The engine asks hasPrimaryContext of each device to stash the caller's current streams; a
    # backward on a device with memory then leaves the caller's stream as it was.
    side = torch.Stream(device=DEV)
    x = torch.ones(16, device=DEV, requires_grad=True)
    side.wait_stream(torch.mtia.current_stream())  # x is filled on the current stream
    with torch.mtia.stream(side):
        (x * 2).sum().backward()
        assert torch.mtia.current_stream() == side
        # The gradient is ready on the stream that called backward (side), as with CUDA: read it
        # there (the default stream has no order against side).
        assert torch.equal(x.grad.cpu(), torch.full((16,), 2.0))


def test_accelerator_memory_functions_reach_the_device_allocator():
    # torch.accelerator's memory functions need the MTIA allocator to be a c10::DeviceAllocator.
    torch.accelerator.empty_cache()
    torch.accelerator.reset_peak_memory_stats()
    before = torch.accelerator.memory_allocated()
    x = torch.empty(1 << 20, device=DEV)  # 4 MiB
    assert torch.accelerator.memory_allocated() == before + (4 << 20)
    assert torch.accelerator.max_memory_allocated() >= before + (4 << 20)
    assert torch.accelerator.memory_reserved() >= torch.accelerator.memory_allocated()
    stats = torch.accelerator.memory_stats()
    assert stats["allocated_bytes.all.current"] == torch.mtia.memory_stats()["dram"]["allocated_bytes"]
    free, total = torch.accelerator.get_memory_info()
    assert total == torch.mtia.get_device_properties(DEV)["total_memory"] and 0 < free < total
    del x
    torch.accelerator.empty_cache()
    assert torch.accelerator.memory_allocated() == before
    torch.accelerator.reset_peak_memory_stats()
    assert torch.accelerator.max_memory_allocated() == before
