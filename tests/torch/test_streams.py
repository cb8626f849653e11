"""Streams and events: current/default streams and the stream context, ordering across streams through
events and wait_stream, query/synchronize, event timing, and record_stream deferring reuse."""
import pytest
import torch

import torch_mtia

DEV = torch_mtia.device(0)


def test_current_default_and_context():
    default = torch_mtia.default_stream()
    assert torch_mtia.current_stream() == default
    s = torch_mtia.Stream()
    assert s != default and s.device == DEV
    with torch_mtia.stream(s):
        assert torch_mtia.current_stream() == s
    assert torch_mtia.current_stream() == default
    hi = torch_mtia.Stream(priority=-1)
    least, greatest = torch_mtia._C.stream_priority_range()
    assert hi.priority == max(greatest, min(least, -1))


def test_wait_stream_orders_work_across_streams():
    side = torch_mtia.Stream()
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):
        torch_mtia._C.sleep_on_stream(100_000)  # keeps side busy: x.fill_ below runs after it
        x.fill_(1.0)
    main = torch_mtia.current_stream()
    main.wait_stream(side)
    y = x * 2  # on the current stream, after side's fill
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 2.0))


def test_event_wait_query_synchronize_and_timing():
    side = torch_mtia.Stream()
    start = torch_mtia.Event(enable_timing=True)
    end = torch_mtia.Event(enable_timing=True)
    assert start.query()  # never recorded: complete
    start.record(side)
    with torch_mtia.stream(side):
        torch_mtia._C.sleep_on_stream(20_000)
    end.record(side)
    end.wait(torch_mtia.current_stream())
    end.synchronize()
    assert end.query() and side.query()
    assert start.elapsed_time(end) > 0.0
    untimed = torch_mtia.Event()
    untimed.record(side)
    untimed.synchronize()
    with pytest.raises(RuntimeError, match="mtiaEventElapsedTime"):
        untimed.elapsed_time(end)


def test_stream_synchronize_and_device_synchronize():
    s = torch_mtia.Stream()
    with torch_mtia.stream(s):
        torch_mtia._C.sleep_on_stream(10_000)
    s.synchronize()
    assert s.query()
    with torch_mtia.stream(s):
        torch_mtia._C.sleep_on_stream(10_000)
    torch_mtia.synchronize()
    assert s.query()


def test_record_stream_defers_reuse_until_the_stream_is_done():
    side = torch_mtia.Stream()
    n = 1 << 18
    # Control: a freed block is reused at once by the next allocation on the same stream.
    a = torch.empty(n, device=DEV)
    ptr = a.data_ptr()
    del a
    b = torch.empty(n, device=DEV)
    assert b.data_ptr() == ptr
    # Used on side (busy for a long while) and recorded: not reused while side has not got there.
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):
        torch_mtia._C.sleep_on_stream(2_000_000)
    b.record_stream(side.torch_stream)
    del b
    c = torch.empty(n, device=DEV)
    assert c.data_ptr() != ptr
    side.synchronize()
    del c
    torch_mtia.empty_cache()


def test_streams_of_the_pool_through_torch():
    # DeviceGuardImplInterface.getStreamFromGlobalPool, reached through torch's generic stream API.
    s = torch_mtia.Stream()
    packed = torch_mtia._C.pack_stream(s._ref)
    assert torch_mtia._C.unpack_stream(packed) == s._ref
    ids = {torch_mtia._C.pool_stream(0, False)[0] for _ in range(20)}
    assert 1 < len(ids) <= 8
