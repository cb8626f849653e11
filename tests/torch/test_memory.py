"""Memory statistics through torch.mtia (and torch_mtia.memory's additions) before and after
allocations, peaks, empty_cache, free memory and device properties."""
import torch

import torch_mtia
from torch_mtia import memory

DEV = torch.device("mtia", 0)
# Upstream's torch.mtia.memory_stats/memory_allocated/... answer {} and 0 until torch.mtia's own
# initialisation has run (a first tensor does not run it).
torch.mtia.init()


def test_stats_follow_allocations_and_empty_cache():
    torch.mtia.empty_cache()
    base = torch.mtia.memory_allocated()
    stats = torch.mtia.memory_stats()
    flat = memory.memory_stats_flat()
    assert stats["dram"]["allocated_bytes"] == stats["allocated_bytes"]["all"]["current"] == base
    assert flat["allocated_bytes.all.current"] == base
    assert stats["reserved_bytes"]["all"]["current"] == flat["reserved_bytes.all.current"]
    x = torch.empty(1 << 20, device=DEV)  # 4 MiB
    assert torch.mtia.memory_allocated() >= base + (4 << 20)
    assert torch.mtia.memory_allocated(DEV) == torch.mtia.memory_allocated(0) == torch.mtia.memory_allocated()
    assert torch.mtia.max_memory_allocated() >= torch.mtia.memory_allocated()
    assert memory.memory_reserved() >= torch.mtia.memory_allocated()
    assert memory.max_memory_reserved() >= memory.memory_reserved()
    del x
    assert torch.mtia.memory_allocated() == base
    assert memory.memory_reserved() > 0  # cached
    torch.mtia.empty_cache()
    assert memory.memory_reserved() == memory.memory_stats_flat()["reserved_bytes.all.current"]
    assert memory.memory_reserved() < (4 << 20)


def test_reset_peak():
    x = torch.empty(1 << 20, device=DEV)
    del x
    assert torch.mtia.max_memory_allocated() >= 4 << 20
    torch.mtia.reset_peak_memory_stats()
    assert torch.mtia.max_memory_allocated() == torch.mtia.memory_allocated()


def test_reset_accumulated_stats():
    x = torch.empty(1 << 10, device=DEV)
    del x
    assert torch.mtia.memory_stats()["allocation"]["all"]["allocated"] >= 1
    memory.reset_accumulated_memory_stats()
    stats = torch.mtia.memory_stats()
    assert stats["allocation"]["all"]["allocated"] == stats["allocation"]["all"]["freed"] == 0


def test_mem_get_info_and_properties():
    free, total = memory.mem_get_info()
    assert 0 < free <= total
    assert torch.mtia.get_device_properties(0)["total_memory"] == total
    assert torch.mtia.get_device_properties(DEV)["total_memory"] == total
    assert torch.mtia.device_count() >= 1 and torch.mtia.is_available()
    assert torch.get_device_module("mtia") is torch.mtia
    assert torch.accelerator.device_count() == torch.mtia.device_count()
