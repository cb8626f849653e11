"""Out of memory (MTIA_SIM_MEMORY=64MiB per device): PyTorch's error carries the runtime's message and
the observer attached through torch.mtia.attach_out_of_memory_observer is called first."""
import pytest
import torch

import torch_mtia

DEV = torch.device("mtia", 0)


def test_oom_raises_with_our_message_and_calls_the_observer():
    calls = []
    torch.mtia.attach_out_of_memory_observer(lambda *args: calls.append(args))
    _, total = torch_mtia.memory.mem_get_info()
    assert total == 64 << 20
    with pytest.raises(RuntimeError) as info:
        torch.empty(128 << 20, dtype=torch.uint8, device=DEV)
    message = str(info.value)
    assert "mtiaMalloc" in message and "mtiaErrorMemoryAllocation" in message
    assert len(calls) == 1
    device, requested, dev_total, dev_free = calls[0]
    assert device == 0 and requested >= 128 << 20 and dev_total == total and dev_free <= total
    assert torch.mtia.memory_stats()["num_ooms"] == 1
    # the device still works afterwards
    assert torch.equal(torch.ones(4, device=DEV).cpu(), torch.ones(4))
