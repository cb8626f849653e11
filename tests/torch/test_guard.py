"""The PrivateUse1 device guard driven as PyTorch drives it (c10::Event, c10::StreamGuard,
getDeviceGuardImpl; test bindings in csrc/python_guard_probe.cpp): event record/block/query, the
stream pool, exchangeStream, recordDataPtrOnStream."""
import torch

import torch_mtia

DEV = torch_mtia.device(0)
C = torch_mtia._C


def current():
    return C.current_stream(0)


def test_event_record_block_and_query():
    side = torch_mtia.Stream()
    ev = C._GuardEvent()
    assert ev.query() and not ev.was_marked_for_recording  # never recorded: complete
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):
        C.sleep_on_stream(200_000)
        x.fill_(1.0)
    ev.record(side._ref)
    assert ev.was_marked_for_recording
    assert not ev.query()  # side is still sleeping
    ev.block(current())
    y = x * 2  # on the current stream, after the block
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 2.0))
    side.synchronize()
    assert ev.query()


def test_a_later_record_does_not_release_an_earlier_block():
    side, idle = torch_mtia.Stream(), torch_mtia.Stream()
    ev = C._GuardEvent()
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):
        C.sleep_on_stream(200_000)
        x.fill_(1.0)
    ev.record(side._ref)
    ev.block(current())
    ev.record(idle._ref)  # completes at once; the block above still waits for side's record
    y = x * 2
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 2.0))


def test_stream_pool_and_stream_guard():
    low = {C._guard_pool_stream(0, False) for _ in range(20)}
    high = {C._guard_pool_stream(0, True) for _ in range(20)}
    assert 1 < len(low) <= 8 and 1 < len(high) <= 8 and not low & high
    least, greatest = C.stream_priority_range()
    prio = {torch_mtia.Stream(_ref=r).priority for r in high}
    assert prio == {greatest}
    s = sorted(low)[0]
    assert C._guard_current_inside_stream_guard(s) == s
    assert current() == C.default_stream(0)  # the guard restored the stream


def test_exchange_stream():
    default = C.default_stream(0)
    s = torch_mtia.Stream()
    assert C._guard_exchange_stream(s._ref) == default
    assert current() == s._ref == C._guard_get_stream(0)
    assert C._guard_exchange_stream(default) == s._ref
    assert current() == default
    # A stream id that names nothing: noexcept, so no exception and no abort; nothing changes.
    assert C._guard_exchange_stream((1 << 40, 0)) == default
    assert current() == default


def test_record_data_ptr_on_stream_defers_reuse():
    side = torch_mtia.Stream()
    n = 1 << 18
    side.wait_stream(torch_mtia.current_stream())
    b = torch.empty(n, device=DEV)
    ptr = b.data_ptr()
    with torch_mtia.stream(side):
        C.sleep_on_stream(2_000_000)
    C._guard_record_data_ptr(b, side._ref)
    del b
    c = torch.empty(n, device=DEV)
    assert c.data_ptr() != ptr  # side has not got past the use
    side.synchronize()
    d = torch.empty(n, device=DEV)  # side got past it: the block comes back
    assert d.data_ptr() == ptr
    del c
