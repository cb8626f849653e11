"""Memory statistics before and after allocations, peaks, empty_cache."""
import torch

import torch_mtia

DEV = torch_mtia.device(0)


def test_stats_follow_allocations_and_empty_cache():
    torch_mtia.empty_cache()
    base = torch_mtia.memory_allocated()
    stats = torch_mtia.memory_stats()
    assert stats["dram"]["allocated_bytes"] == stats["allocated_bytes.all.current"] == base
    assert stats["reserved_bytes"]["all"]["current"] == stats["reserved_bytes.all.current"]
    x = torch.empty(1 << 20, device=DEV)  # 4 MiB
    assert torch_mtia.memory_allocated() >= base + (4 << 20)
    assert torch_mtia.max_memory_allocated() >= torch_mtia.memory_allocated()
    assert torch_mtia.memory_reserved() >= torch_mtia.memory_allocated()
    del x
    assert torch_mtia.memory_allocated() == base
    assert torch_mtia.memory_reserved() > 0  # cached
    torch_mtia.empty_cache()
    assert torch_mtia.memory_reserved() == torch_mtia.memory_stats()["reserved_bytes.all.current"]
    assert torch_mtia.memory_reserved() < (4 << 20)


def test_reset_peak():
    x = torch.empty(1 << 20, device=DEV)
    del x
    assert torch_mtia.max_memory_allocated() >= 4 << 20
    torch_mtia.reset_peak_memory_stats()
    assert torch_mtia.max_memory_allocated() == torch_mtia.memory_allocated()


def test_mem_get_info_and_properties():
    free, total = torch_mtia.mem_get_info()
    assert 0 < free <= total
    assert torch_mtia.get_device_properties(0)["total_memory"] == total
    assert torch_mtia.device_count() >= 1 and torch_mtia.is_available()
    assert torch.privateuseone.device_count() == torch_mtia.device_count()  # registered module
