"""Streams and events through PyTorch's own API (torch.mtia.Stream/Event are torch.Stream/Event):
current/default streams and the stream context, ordering across streams through events and
wait_stream, query/synchronize, event timing, record_stream deferring reuse, and backward passes on a
side stream."""
import subprocess
import sys

import pytest
import torch

import torch_mtia

DEV = torch.device("mtia", 0)


def test_current_default_and_context():
    default = torch.mtia.default_stream()
    assert torch.mtia.Stream is torch.Stream and torch.mtia.Event is torch.Event
    assert torch.mtia.current_stream() == default
    assert default.device == DEV and default.device_index == 0
    s = torch.mtia.Stream(device=DEV)
    assert s != default and s.device == DEV
    with torch.mtia.stream(s):
        assert torch.mtia.current_stream() == s
        assert torch.mtia.current_stream(0) == s and torch.mtia.current_stream(DEV) == s
    assert torch.mtia.current_stream() == default
    hi = torch.mtia.Stream(device=DEV, priority=-1)
    least, greatest = torch_mtia.stream_priority_range()
    assert torch_mtia._C.stream_priority(hi) == greatest
    assert torch_mtia._C.stream_priority(s) == least


def test_stream_without_a_device_is_on_the_current_accelerator():
    s = torch.Stream()
    assert s.device == DEV


def test_wait_stream_orders_work_across_streams():
    side = torch.mtia.Stream(device=DEV)
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        torch_mtia._C.sleep_on_stream(100_000)  # keeps side busy: x.fill_ below runs after it
        x.fill_(1.0)
    main = torch.mtia.current_stream()
    main.wait_stream(side)
    y = x * 2  # on the current stream, after side's fill
    assert torch.equal(y.cpu(), torch.full((1 << 16,), 2.0))


def test_event_wait_query_synchronize_and_timing():
    side = torch.mtia.Stream(device=DEV)
    start = torch.mtia.Event(device=DEV, enable_timing=True)
    end = torch.mtia.Event(device=DEV, enable_timing=True)
    assert start.query()  # never recorded: complete
    start.record(side)
    with torch.mtia.stream(side):
        torch_mtia._C.sleep_on_stream(20_000)
    end.record(side)
    end.wait(torch.mtia.current_stream())
    end.synchronize()
    assert end.query() and side.query()
    assert start.elapsed_time(end) > 0.0
    untimed = torch.mtia.Event(device=DEV)
    untimed.record(side)
    untimed.synchronize()
    # PyTorch refuses it before the guard's elapsedTime is reached (which the runtime would refuse
    # with mtiaEventElapsedTime's error).
    with pytest.raises(ValueError, match="enable_timing=True"):
        untimed.elapsed_time(end)


def test_stream_record_event_and_wait_event():
    side = torch.mtia.Stream(device=DEV)
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        torch_mtia._C.sleep_on_stream(100_000)
        x.fill_(4.0)
    ev = side.record_event()  # a new event recorded on side
    assert isinstance(ev, torch.Event) and ev.device == DEV
    torch.mtia.current_stream().wait_event(ev)
    assert torch.equal((x + 1).cpu(), torch.full((1 << 16,), 5.0))
    assert ev.query()


def test_stream_synchronize_and_device_synchronize():
    s = torch.mtia.Stream(device=DEV)
    with torch.mtia.stream(s):
        torch_mtia._C.sleep_on_stream(10_000)
    s.synchronize()
    assert s.query()
    with torch.mtia.stream(s):
        torch_mtia._C.sleep_on_stream(10_000)
    torch.mtia.synchronize()
    assert s.query()
    with torch.mtia.stream(s):
        torch_mtia._C.sleep_on_stream(10_000)
    torch.mtia.synchronize(DEV)
    assert s.query()


def test_record_stream_defers_reuse_until_the_stream_is_done():
    side = torch.mtia.Stream(device=DEV)
    n = 1 << 18
    # Control: a freed block is reused at once by the next allocation on the same stream.
    a = torch.empty(n, device=DEV)
    ptr = a.data_ptr()
    del a
    b = torch.empty(n, device=DEV)
    assert b.data_ptr() == ptr
    # Used on side (busy for a long while) and recorded: not reused while side has not got there.
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        torch_mtia._C.sleep_on_stream(2_000_000)
    b.record_stream(side)
    del b
    c = torch.empty(n, device=DEV)
    assert c.data_ptr() != ptr
    side.synchronize()
    del c
    torch.mtia.empty_cache()


def test_stream_survives_packing_into_its_python_parts():
    # torch.Stream is (stream id, device index, device type); the runtime's stream id must survive a
    # round trip through those integers, for two different streams, and name a live stream again.
    s, t = torch.mtia.Stream(device=DEV), torch.mtia.Stream(device=DEV, priority=-1)
    assert s.stream_id != t.stream_id
    back = torch.Stream(stream_id=t.stream_id, device_index=t.device_index, device_type=t.device_type)
    assert back == t and back != s
    assert torch_mtia._C.stream_priority(back) == torch_mtia._C.stream_priority(t)
    with torch.mtia.stream(back):
        assert torch.mtia.current_stream() == t
    # torch.mtia._set_stream_by_id: the same three integers through torch._C._mtia_setStream.
    torch.mtia._set_stream_by_id(s.stream_id, s.device_index, s.device_type)
    try:
        assert torch.mtia.current_stream() == s
    finally:
        torch.mtia.set_stream(torch.mtia.default_stream())


def test_new_streams_come_from_the_pool():
    # torch.Stream(device="mtia") is the guard's getNewStream: a stream of the pool, handed out round
    # robin, so that Stream objects made in a loop create no runtime streams; high priority has its
    # own pool.
    low = [torch.mtia.Stream(device=DEV) for _ in range(20)]
    high = [torch.mtia.Stream(device=DEV, priority=-1) for _ in range(20)]
    low_ids = {s.stream_id for s in low}
    high_ids = {s.stream_id for s in high}
    assert 1 < len(low_ids) <= 8 and 1 < len(high_ids) <= 8 and not low_ids & high_ids
    assert torch.mtia.default_stream().stream_id not in low_ids | high_ids
    assert low[0] == low[len(low_ids)]  # round robin


def test_record_stream_block_is_reusable_once_the_side_stream_finished():
    side = torch.mtia.Stream(device=DEV)
    n = 1 << 18
    side.wait_stream(torch.mtia.current_stream())
    b = torch.empty(n, device=DEV)
    ptr = b.data_ptr()
    with torch.mtia.stream(side):
        torch_mtia._C.sleep_on_stream(1_000)
    b.record_stream(side)
    del b
    side.synchronize()
    c = torch.empty(n, device=DEV)  # side got past the use: the block comes back
    assert c.data_ptr() == ptr


def test_non_blocking_copies_follow_stream_order():
    side = torch.mtia.Stream(device=DEV)
    x = torch.zeros(1 << 16, device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        torch_mtia._C.sleep_on_stream(50_000)
        x.fill_(3.0)  # lands after the sleep
        pageable = torch.empty(1 << 16)
        pageable.copy_(x, non_blocking=True)  # a pageable destination is complete on return
        assert torch.equal(pageable, torch.full((1 << 16,), 3.0))
        # PyTorch 2.13 gives .to("cpu", non_blocking=True) from an accelerator a pinned destination
        # (the MTIA hooks' pinned allocator), which is complete once the stream got past the copy.
        x.fill_(4.0)
        host = x.to("cpu", non_blocking=True)
        assert host.is_pinned()
        side.synchronize()
        assert torch.equal(host, torch.full((1 << 16,), 4.0))
        back = torch.empty(1 << 16, device=DEV)
        back.copy_(host * 2, non_blocking=True)
    side.synchronize()
    assert torch.equal(back.cpu(), torch.full((1 << 16,), 8.0))


def test_resize_keeps_the_old_bytes_on_another_stream():
    # x's block belongs to side; resize_ copies it on the current stream, which is busy, and drops it.
    # Side's next allocation of that size must not get the block before the copy read it.
    side = torch.mtia.Stream(device=DEV)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        x = torch.arange(1 << 14, dtype=torch.float32).to(DEV)
    torch.mtia.current_stream().wait_stream(side)
    torch_mtia._C.sleep_on_stream(200_000)  # the current stream gets to the copy late
    x.resize_(1 << 15)
    with torch.mtia.stream(side):
        filler = torch.full((1 << 14,), -1.0, device=DEV)
    torch.mtia.synchronize()
    assert torch.equal(x[: 1 << 14].cpu(), torch.arange(1 << 14, dtype=torch.float32))
    del filler


def test_backward_on_a_side_stream_is_ordered_with_that_stream():
    # The backward waits for the forward's stream (kept busy by a sleep before the relu it reads),
    # and the gradients are read on that stream without a synchronize. Several rounds, as a missing
    # order shows only some of the time.
    side = torch.mtia.Stream(device=DEV)
    base = torch.randn(1 << 15)
    expected = (base > 0).to(torch.float32) * 3.0
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        for i in range(20):
            x = base.to(DEV).requires_grad_()
            torch_mtia._C.sleep_on_stream(2_000)
            ((x * 3.0).relu()).sum().backward()
            assert torch.equal(x.grad.cpu(), expected), f"round {i}"
    # The same through torch.autograd.grad, and the default stream's order is left alone.
    x = base.to(DEV).requires_grad_()
    with torch.mtia.stream(side):
        torch_mtia._C.sleep_on_stream(2_000)
        (g,) = torch.autograd.grad(((x * 3.0).relu()).sum(), [x])
        assert torch.equal(g.cpu(), expected)
    (g,) = torch.autograd.grad(((x * 3.0).relu()).sum(), [x])
    assert torch.equal(g.cpu(), expected)


def test_backward_mixing_cpu_and_device_gradients_on_a_side_stream():
    # A node fed by a CPU gradient (ToCopyBackward0) runs on the calling thread, and the gradients of x
    # meet there: both contributions are ordered with the side stream.
    side = torch.mtia.Stream(device=DEV)
    base = torch.randn(1 << 15)
    side.wait_stream(torch.mtia.current_stream())
    with torch.mtia.stream(side):
        for i in range(10):
            x = base.to(DEV).requires_grad_()
            torch_mtia._C.sleep_on_stream(2_000)
            ((x * 2.0).relu().sum() + (x.cpu() * 3.0).sum()).backward()
            expected = (base > 0).to(torch.float32) * 2.0 + 3.0
            assert torch.equal(x.grad.cpu(), expected), f"round {i}"
            assert torch.mtia.current_stream() == side  # the caller's stream again after the pass


def test_the_same_stream_nests_as_a_context():
    s = torch.mtia.Stream(device=DEV)
    default = torch.mtia.current_stream()
    with s:
        with s:
            assert torch.mtia.current_stream() == s
        assert torch.mtia.current_stream() == s
    assert torch.mtia.current_stream() == default
    with torch.mtia.stream(s):
        with torch.mtia.stream(s):
            assert torch.mtia.current_stream() == s
        assert torch.mtia.current_stream() == s
    assert torch.mtia.current_stream() == default


def test_collected_stream_that_is_still_current_does_not_abort():
    # The Stream object goes away while its stream is current and autograd's engine asks the guard
    # for it (getStream / exchangeStream are noexcept): it must keep working, in a child process so
    # that an abort is a failure rather than the end of the test run.
    code = """if True:
        import gc, torch, torch_mtia
        s = torch.mtia.Stream(device="mtia")
        sid = s.stream_id
        torch.mtia.set_stream(s)
        del s
        gc.collect()
        x = torch.ones(4, device="mtia").requires_grad_()
        (x * 2).sum().backward()
        assert torch.equal(x.grad.cpu(), torch.full((4,), 2.0)), x.grad.cpu()
        assert torch.mtia.current_stream().stream_id == sid, "current"
        print("ok", flush=True)
    """
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and out.stdout.strip() == "ok", out.stderr


def test_exit_right_after_backward_does_not_abort():
    # Note [autograd threads at exit] (csrc/autograd_exit.h): PyTorch's autograd device thread may
    # drop its last task's Python objects while the interpreter finalizes, which aborts the process
    # (about 1 exit in 20 here without torch_mtia's atexit drain). Eight short scripts that exit
    # right after a backward pass over MTIA tensors, on both devices, must all exit cleanly.
    code = """if True:
        import torch, torch_mtia
        for d in range(torch.mtia.device_count()):
            x = torch.ones(4, device=f"mtia:{d}", requires_grad=True)
            (x * 3).sum().backward()
        print(float(x.grad.cpu().sum()), flush=True)
    """
    children = [subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True) for _ in range(8)]
    for child in children:
        out, err = child.communicate(timeout=120)
        assert child.returncode == 0 and out.strip() == "12.0", (child.returncode, err)
