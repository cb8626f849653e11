"""Streams and events: current/default streams and the stream context, ordering across streams through
events and wait_stream, query/synchronize, event timing, and record_stream deferring reuse."""
import subprocess
import sys

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


def test_stream_packs_into_a_torch_stream_and_back():
    # torch.Stream carries (device type, index, id) packed into 64 bits; the runtime's stream id must
    # survive it, for two different streams, and name a live stream again.
    s, t = torch_mtia.Stream(), torch_mtia.Stream(priority=-1)
    packed, packed_t = torch_mtia._C.pack_stream(s._ref), torch_mtia._C.pack_stream(t._ref)
    assert packed != packed_t
    assert s.torch_stream.device == DEV
    assert torch_mtia._C.unpack_stream(s.torch_stream._cdata) == s._ref
    assert torch_mtia._C.unpack_stream(packed_t) == t._ref != s._ref
    back = torch_mtia.Stream(_ref=torch_mtia._C.unpack_stream(packed_t))
    assert back == t and back.priority == t.priority
    with torch_mtia.stream(back):
        assert torch_mtia.current_stream() == t


def test_streams_of_the_pool_through_torch():
    # DeviceGuardImplInterface.getStreamFromGlobalPool, reached through torch's generic stream API.
    ids = {torch_mtia._C.pool_stream(0, False)[0] for _ in range(20)}
    assert 1 < len(ids) <= 8


def test_record_stream_block_is_reusable_once_the_side_stream_finished():
    side = torch_mtia.Stream()
    n = 1 << 18
    side.wait_stream(torch_mtia.current_stream())
    b = torch.empty(n, device=DEV)
    ptr = b.data_ptr()
    with torch_mtia.stream(side):
        torch_mtia._C.sleep_on_stream(1_000)
    b.record_stream(side.torch_stream)
    del b
    side.synchronize()
    c = torch.empty(n, device=DEV)  # side got past the use: the block comes back
    assert c.data_ptr() == ptr


def test_non_blocking_copies_follow_stream_order():
    side = torch_mtia.Stream()
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):
        torch_mtia._C.sleep_on_stream(50_000)
        x.fill_(3.0)  # lands after the sleep
        host = x.to("cpu", non_blocking=True)  # a pageable destination is complete on return
        assert torch.equal(host, torch.full((1 << 16,), 3.0))
        back = torch.empty(1 << 16, device=DEV)
        back.copy_(host * 2, non_blocking=True)
    side.synchronize()
    assert torch.equal(back.cpu(), torch.full((1 << 16,), 6.0))


def test_resize_keeps_the_old_bytes_on_another_stream():
    # x's block belongs to side; resize_ copies it on the current stream, which is busy, and drops it.
    # Side's next allocation of that size must not get the block before the copy read it.
    side = torch_mtia.Stream()
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):
        x = torch.arange(1 << 14, dtype=torch.float32).to(DEV)
    torch_mtia.current_stream().wait_stream(side)
    torch_mtia._C.sleep_on_stream(200_000)  # the current stream gets to the copy late
    x.resize_(1 << 15)
    with torch_mtia.stream(side):
        filler = torch.full((1 << 14,), -1.0, device=DEV)
    torch_mtia.synchronize()
    assert torch.equal(x[: 1 << 14].cpu(), torch.arange(1 << 14, dtype=torch.float32))
    del filler


def test_backward_on_a_side_stream_is_ordered_with_that_stream():
    # PyTorch 1.13's engine runs MTIA backward nodes on the device's default stream; torch_mtia fences
    # it: the backward waits for the forward's stream (kept busy by a sleep before the relu it reads),
    # and the gradients are read on that stream without a synchronize. Several rounds, as a missing
    # order shows only some of the time.
    side = torch_mtia.Stream()
    base = torch.randn(1 << 15)
    expected = (base > 0).to(torch.float32) * 3.0
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):
        for i in range(20):
            x = base.to(DEV).requires_grad_()
            torch_mtia._C.sleep_on_stream(2_000)
            ((x * 3.0).relu()).sum().backward()
            assert torch.equal(x.grad.cpu(), expected), f"round {i}"
    # The same through torch.autograd.grad, and the fence leaves the default stream's order alone.
    x = base.to(DEV).requires_grad_()
    with torch_mtia.stream(side):
        torch_mtia._C.sleep_on_stream(2_000)
        (g,) = torch.autograd.grad(((x * 3.0).relu()).sum(), [x])
        assert torch.equal(g.cpu(), expected)
    (g,) = torch.autograd.grad(((x * 3.0).relu()).sum(), [x])
    assert torch.equal(g.cpu(), expected)


def test_backward_mixing_cpu_and_device_gradients_on_a_side_stream():
    # A node fed by a CPU gradient (ToCopyBackward0) runs on the calling thread, and the gradients of x
    # meet there: that thread runs on the default stream during the pass too, so both contributions
    # are ordered.
    side = torch_mtia.Stream()
    base = torch.randn(1 << 15)
    side.wait_stream(torch_mtia.current_stream())
    with torch_mtia.stream(side):
        for i in range(10):
            x = base.to(DEV).requires_grad_()
            torch_mtia._C.sleep_on_stream(2_000)
            ((x * 2.0).relu().sum() + (x.cpu() * 3.0).sum()).backward()
            expected = (base > 0).to(torch.float32) * 2.0 + 3.0
            assert torch.equal(x.grad.cpu(), expected), f"round {i}"
            assert torch_mtia.current_stream() == side  # the caller's stream again after the pass


def test_the_same_stream_nests_as_a_context():
    s = torch_mtia.Stream()
    default = torch_mtia.current_stream()
    with s:
        with s:
            assert torch_mtia.current_stream() == s
        assert torch_mtia.current_stream() == s
    assert torch_mtia.current_stream() == default


def test_engine_wrapper_keeps_the_engine_interface():
    from torch.autograd.variable import Variable

    engine = Variable._execution_engine
    assert isinstance(engine, torch_mtia._autograd._StreamOrderedEngine)
    torch_mtia._autograd.install()  # a second install wraps nothing again
    assert Variable._execution_engine is engine
    assert engine.is_checkpoint_valid() is True
    x = torch.ones(3, requires_grad=True)  # a CPU backward passes through with no device fenced
    (x * 2).sum().backward()
    assert torch.equal(x.grad, torch.full((3,), 2.0))


def test_collected_stream_that_is_still_current_does_not_abort():
    # The Stream object goes away while its stream is current and autograd's engine asks the guard
    # for it (getStream / exchangeStream are noexcept): it must keep working, in a child process so
    # that an abort is a failure rather than the end of the test run.
    code = """if True:
        import gc, torch, torch_mtia
        s = torch_mtia.Stream()
        sid = s.stream_id
        torch_mtia.set_stream(s)
        del s
        gc.collect()
        x = torch.ones(4, device=torch_mtia.device(0)).requires_grad_()
        (x * 2).sum().backward()
        assert torch.equal(x.grad.cpu(), torch.full((4,), 2.0)), x.grad.cpu()
        assert torch_mtia.current_stream().stream_id == sid, "current"
        t = torch_mtia.Stream()  # the released stream is handed out again, never destroyed
        assert t.stream_id == sid, "reuse"
        print("ok")
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_released_streams_are_handed_out_again():
    s = torch_mtia.Stream()
    sid = s.stream_id
    del s
    again = torch_mtia.Stream()
    assert again.stream_id == sid
    other = torch_mtia.Stream()
    assert other.stream_id != sid
