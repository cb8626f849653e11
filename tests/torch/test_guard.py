"""The MTIA device guard (csrc/guard.cpp) driven as PyTorch drives it: torch.Event (record, block
through wait, query, synchronize), torch.Stream (the stream pool through getNewStream, the stream
context through exchangeStream, query, synchronize, is_capturing), torch.accelerator (current
stream, device index and synchronize through the guard), and record_stream deferring reuse."""
import pytest
import torch

import torch_mtia

DEV = torch.device("mtia", 0)
sleep_on_stream = torch_mtia._C.sleep_on_stream


def test_event_record_block_and_query():
    side = torch.Stream(device=DEV)
    ev = torch.Event(device=DEV)
    assert ev.query()  # never recorded: complete
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        sleep_on_stream(200_000)
        x.fill_(1.0)
    ev.record(side)
    assert not ev.query()  # side is still sleeping
    ev.wait(torch.mtia.current_stream())  # the guard's block
    y = x * 2  # on the current stream, after the block
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 2.0))
    ev.synchronize()
    assert ev.query()


def test_a_later_record_does_not_release_an_earlier_block():
    side, idle = torch.Stream(device=DEV), torch.Stream(device=DEV, priority=-1)
    ev = torch.Event(device=DEV)
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        sleep_on_stream(200_000)
        x.fill_(1.0)
    ev.record(side)
    ev.wait(torch.mtia.current_stream())
    ev.record(idle)  # completes at once; the block above still waits for side's record
    y = x * 2
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 2.0))


def test_event_record_without_a_stream_takes_the_current_one():
    ev = torch.Event(device=DEV)
    sleep_on_stream(100_000)
    ev.record()
    assert not ev.query()
    ev.synchronize()
    assert ev.query() and torch.mtia.current_stream().query()


def test_stream_pool_and_stream_context():
    low = {torch.Stream(device=DEV).stream_id for _ in range(20)}
    high = [torch.Stream(device=DEV, priority=-1) for _ in range(20)]
    assert 1 < len(low) <= 8 and 1 < len({s.stream_id for s in high}) <= 8
    assert not low & {s.stream_id for s in high}
    _, greatest = torch_mtia.stream_priority_range()
    assert {torch_mtia._C.stream_priority(s) for s in high} == {greatest}
    default = torch.mtia.default_stream()
    s = high[0]
    with s:  # torch.Stream's context: the guard's exchangeStream
        assert torch.accelerator.current_stream() == s == torch.mtia.current_stream()
    assert torch.accelerator.current_stream() == default  # restored


def test_exchange_stream_through_torch_accelerator():
    default = torch.mtia.default_stream()
    s = torch.Stream(device=DEV)
    torch.accelerator.set_stream(s)
    try:
        assert torch.accelerator.current_stream() == s == torch.mtia.current_stream()
    finally:
        torch.accelerator.set_stream(default)
    assert torch.mtia.current_stream() == default
    # A stream id that names nothing: exchangeStream is noexcept, so no exception and no abort; it
    # changes nothing (logged). The hooks' setCurrentStream refuses it.
    bogus = torch.Stream(stream_id=1 << 40, device_index=0, device_type=default.device_type)
    torch.accelerator.set_stream(bogus)
    assert torch.mtia.current_stream() == default
    with pytest.raises(RuntimeError):
        torch.mtia.set_stream(bogus)
    assert torch.mtia.current_stream() == default


def test_stream_query_and_synchronize():
    s = torch.Stream(device=DEV)
    with torch.mtia.stream(s):
        sleep_on_stream(200_000)
    assert not s.query()
    s.synchronize()
    assert s.query()
    with torch.mtia.stream(s):
        sleep_on_stream(50_000)
    torch.accelerator.synchronize()  # the guard's synchronizeDevice
    assert s.query()
    with torch.mtia.stream(s):
        sleep_on_stream(50_000)
    torch.accelerator.synchronize(DEV)
    assert s.query()


def test_device_index_through_the_guard():
    assert torch.accelerator.current_device_index() == torch.mtia.current_device() == 0
    if torch.accelerator.device_count() < 2:
        pytest.skip("one device")
    with torch.accelerator.device_index(1):  # exchangeDevice, then back
        assert torch.accelerator.current_device_index() == 1 == torch.mtia.current_device()
        assert torch.Stream().device == torch.device("mtia", 1)
        assert torch.ones(2, device="mtia").device == torch.device("mtia", 1)
    assert torch.accelerator.current_device_index() == 0
    torch.accelerator.set_device_index(1)
    try:
        assert torch.mtia.current_device() == 1
    finally:
        torch.accelerator.set_device_index(0)
    assert torch.mtia.current_device() == 0


def test_is_capturing_during_a_graph_capture():
    s = torch.Stream(device=DEV)
    assert not s.is_capturing()
    x = torch.ones(8, device=DEV)
    g = torch.mtia.MTIAGraph()
    with torch.mtia.graph(g, stream=s):
        assert s.is_capturing() and torch.mtia.current_stream().is_capturing()
        y = x * 2
    assert not s.is_capturing()
    g.replay()
    assert torch.equal(y.cpu(), torch.full((8,), 2.0))
    g.destroy()


def test_record_stream_defers_reuse():
    side = torch.Stream(device=DEV)
    n = 1 << 18
    side.wait_stream(torch.mtia.current_stream())
    b = torch.empty(n, device=DEV)
    ptr = b.data_ptr()
    with torch.mtia.stream(side):
        sleep_on_stream(2_000_000)
    b.record_stream(side)
    del b
    c = torch.empty(n, device=DEV)
    assert c.data_ptr() != ptr  # side has not got past the use
    side.synchronize()
    d = torch.empty(n, device=DEV)  # side got past it: the block comes back
    assert d.data_ptr() == ptr
    del c
