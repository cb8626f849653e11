"""torch_mtia.autotune: the tuning pool with good, faulting, hanging and aborting candidates from
autotune_test_kernels.c ($MTIA_AUTOTUNE_TEST_KERNELS), its disk cache across processes, arguments
that reach the parent's tensors, and what it leaves behind (no child processes, no imports holding
the parent's memory)."""
import ctypes
import gc
import json
import os
import subprocess
import sys
import textwrap
import time

import pytest
import torch

import torch_mtia
from torch_mtia import autotune

KERNELS = os.environ["MTIA_AUTOTUNE_TEST_KERNELS"]
torch.mtia.init()
DEVICES = list(range(min(2, torch.mtia.device_count())))


def spin(us, **kw):
    return autotune.Candidate("spin_us", module=KERNELS, args=(autotune.value(ctypes.c_uint64(us)),),
                              config={"us": us}, **kw)


def children():
    """Pids whose parent is this process, zombies included (/proc: psutil is not installed)."""
    me, out = os.getpid(), []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as f:
                    fields = f.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == me:
                out.append((int(entry), fields[0]))
    return out


def assert_no_children():
    assert children() == []
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("MTIA_AUTOTUNE_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def mixed_candidates():
    def build_fails():
        raise RuntimeError("the compiler rejected it")

    return [
        # Far apart: the machine's load moves a time by a few hundred microseconds at times.
        spin(8000), spin(100), spin(5000),
        autotune.Candidate("spin_us", build=lambda: KERNELS, config={"us": 4000, "built": True},
                           args=(autotune.value(ctypes.c_uint64(4000)),)),
        autotune.Candidate("reports_fault", module=KERNELS, config="reports_fault"),
        autotune.Candidate("null_write", module=KERNELS, config="null_write"),
        autotune.Candidate("hang", module=KERNELS, config="hang", timeout_s=1.0),
        autotune.Candidate("aborts", module=KERNELS, config="aborts"),
        autotune.Candidate("kills_process", module=KERNELS, config="kills_process"),
        autotune.Candidate("no_such_kernel", module=KERNELS, config="missing"),
        autotune.Candidate("spin_us", build=build_fails, config="build_fails"),
        spin(6000),
    ]


def test_mixed_candidates_winner_and_every_failure(cache):
    key = autotune.cache_key("spin", [(4, 4)], [torch.float32], 0)
    with autotune.TuningPool(DEVICES, warmup=1, repetitions=5, timeout_s=20.0) as pool:
        best = pool.tune(key, mixed_candidates(), [])
        results = {json.dumps(r.config, sort_keys=True): r for r in pool.last_results}
        stats = pool.stats
    assert_no_children()
    assert best.ok and best.config == {"us": 100} and not best.cached, pool.last_results
    assert best.time_ms == sorted(best.times_ms)[2] and len(best.times_ms) == 5
    assert best.time_ms >= 0.1
    ok = {c for c, r in results.items() if r.ok}
    assert ok == {'{"us": 8000}', '{"us": 100}', '{"us": 5000}', '{"built": true, "us": 4000}',
                  '{"us": 6000}'}
    assert all(r.error is None and r.device in DEVICES for c, r in results.items() if c in ok)

    fault = results['"reports_fault"']
    assert fault.error_code == 719 and "reports_fault: fault requested by the test" in fault.error
    assert fault.recovery in ("reset", "restart")
    null = results['"null_write"']
    if null.recovery == "reset":  # the runtime turned the SIGSEGV into a device error
        assert null.error_code == 700 and "null_write" in null.error
    else:
        assert null.recovery == "restart" and "died" in null.error
    hang = results['"hang"']
    assert hang.recovery == "timeout" and "timed out after 1 s" in hang.error
    aborts = results['"aborts"']
    assert aborts.recovery in ("reset", "restart") and aborts.error
    killed = results['"kills_process"']
    assert killed.recovery == "restart" and "died" in killed.error and "SIGKILL" in killed.error
    missing = results['"missing"']
    assert missing.error_code == 500 and "no_such_kernel" in missing.error and missing.recovery is None
    build = results['"build_fails"']
    assert build.device == -1 and "build failed: RuntimeError: the compiler rejected it" in build.error
    assert stats["timeouts"] == 1 and stats["resets"] + stats["restarts"] >= 4
    assert stats["benchmarked"] == len(results) - 1  # the failed build never reached a worker
    assert autotune.cache_lookup(key) == {"us": 100}


def test_second_process_reuses_the_cache(cache):
    key = autotune.cache_key("spin_reuse", [(8,)], [torch.float32], 0)
    with autotune.TuningPool(DEVICES, warmup=1, repetitions=2) as pool:
        first = pool.tune(key, [spin(5000), spin(50)], [])
    assert first.config == {"us": 50}
    script = textwrap.dedent(f"""
        import ctypes, json, torch, torch_mtia
        from torch_mtia import autotune
        key = autotune.cache_key("spin_reuse", [(8,)], [torch.float32], 0)
        cands = [autotune.Candidate("spin_us", module={KERNELS!r}, config={{"us": us}},
                                    args=(autotune.value(ctypes.c_uint64(us)),)) for us in (5000, 50)]
        with autotune.TuningPool() as pool:
            best = pool.tune(key, cands, [])
            print(json.dumps({{"config": best.config, "cached": best.cached, "stats": pool.stats}}))
    """)
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120,
                         env=dict(os.environ, MTIA_AUTOTUNE_CACHE_DIR=str(cache)))
    assert out.returncode == 0, out.stderr
    answer = json.loads(out.stdout.strip().splitlines()[-1])
    assert answer["config"] == {"us": 50} and answer["cached"]
    assert answer["stats"]["benchmarked"] == 0 and answer["stats"]["workers_started"] == 0
    assert answer["stats"]["cache_hits"] == 1


def test_arguments_reach_the_parents_tensors(cache):
    big = torch.zeros(16, dtype=torch.int64, device="mtia:0")
    dst = big[4:]  # inside its allocation: the worker adds the offset back
    other = torch.zeros(8, dtype=torch.int64, device=f"mtia:{DEVICES[-1]}")
    value = 0x1234_5678_9abc
    data = bytes(ctypes.c_uint64(value)) + bytes(16)
    with autotune.TuningPool(DEVICES, warmup=0, repetitions=1) as pool:
        by_struct = pool.submit(autotune.Candidate(
            "write_struct", module=KERNELS,
            args=(autotune.struct(data, [(8, 0, 8), (16, 1, 16)]),)), [dst, other])
        by_ptr = pool.submit(autotune.Candidate(
            "write_u64", module=KERNELS, args=(autotune.ptr(0, 5 * 8), autotune.value(ctypes.c_uint64(7)))),
            [dst])
        f = torch.zeros(8, device=f"mtia:{DEVICES[-1]}")
        builtin = pool.submit(autotune.Candidate(  # a runtime built-in: no module
            "fill_f32", args=(autotune.ptr(0, 4), autotune.value(ctypes.c_float(2.5)),
                              autotune.value(ctypes.c_uint64(3)))), {DEVICES[-1]: [f]})
        assert builtin.result().ok and builtin.result().device == DEVICES[-1]
        assert f.cpu().tolist() == [0, 2.5, 2.5, 2.5, 0, 0, 0, 0]
        assert by_struct.result().ok, by_struct.result().error
        assert by_ptr.result().ok, by_ptr.result().error
        expected_big = [0] * 16
        expected_big[4 + 1] = value
        expected_big[4 + 5] = 7
        assert big.cpu().tolist() == expected_big
        assert other.cpu().tolist() == [0, 0, ~value, 0, 0, 0, 0, 0]


def test_worker_recovers_after_a_fault(cache):
    """After a faulting candidate the same device runs the next ones on the same buffers (the worker
    reset its device and reopened its imports, or was restarted)."""
    buf = torch.zeros(2, dtype=torch.int64, device="mtia:0")

    def write(v):
        return autotune.Candidate("write_u64", module=KERNELS,
                                  args=(autotune.ptr(0, 8), autotune.value(ctypes.c_uint64(v))))

    with autotune.TuningPool(DEVICES[:1], warmup=0, repetitions=1) as pool:
        futures = [pool.submit(c, [buf]) for c in
                   (write(1), autotune.Candidate("null_write", module=KERNELS), write(2))]
        first, fault, second = [f.result() for f in futures]
        assert first.ok and second.ok, (first.error, second.error)
        assert not fault.ok and fault.recovery in ("reset", "restart")
        assert buf.cpu().tolist() == [0, 2]
        # Without a reset the worker would have been started again.
        assert pool.stats["workers_started"] == (1 if fault.recovery == "reset" else 2)


def test_no_processes_or_imports_left(cache):
    torch.mtia.synchronize()
    before = torch.mtia.memory_allocated(0)
    buf = torch.zeros(1 << 16, dtype=torch.int64, device="mtia:0")
    pool = autotune.TuningPool(DEVICES, warmup=0, repetitions=1)
    pool.start()
    workers = {pid for pid, _ in children()}
    assert len(workers) == len(DEVICES)
    r = pool.submit(autotune.Candidate("write_u64", module=KERNELS,
                                       args=(autotune.ptr(0), autotune.value(ctypes.c_uint64(1)))),
                    [buf]).result()
    assert r.ok, r.error
    smi = subprocess.run([os.environ["MTIA_SMI"], "-q", "--json"], capture_output=True, text=True,
                         timeout=60)
    assert smi.returncode == 0, smi.stderr
    pool.close()
    pool.close()  # idempotent
    assert_no_children()
    with pytest.raises(RuntimeError):
        pool.submit(spin(1))
    # With no importer left, freeing the tensor completes: its block returns to the allocator.
    del buf
    torch.mtia.synchronize()
    assert torch.mtia.memory_allocated(0) == before
    smi = subprocess.run([os.environ["MTIA_SMI"], "-q", "--json"], capture_output=True, text=True,
                         timeout=60)
    listed = {p["pid"] for d in json.loads(smi.stdout)["devices"] for p in d["process_list"]}
    assert not listed & workers


def test_idle_worker_drops_its_imports(cache):
    """A freed tensor's memory comes back while the pool lives on (the worker closes its imports
    when it runs out of work)."""
    torch.mtia.synchronize()
    before = torch.mtia.memory_allocated(0)
    with autotune.TuningPool(DEVICES[:1], warmup=0, repetitions=1) as pool:
        buf = torch.zeros(1 << 16, dtype=torch.int64, device="mtia:0")
        assert pool.submit(autotune.Candidate(
            "write_u64", module=KERNELS, args=(autotune.ptr(0), autotune.value(ctypes.c_uint64(3)))),
            [buf]).result().ok
        # One more job after the idle period: the worker has closed the import by the time it
        # answers it.
        time.sleep(0.3)
        assert pool.submit(spin(1)).result().ok
        del buf
        torch.mtia.synchronize()
        torch.empty(16, device="mtia:0")  # an allocation completes deferred frees
        assert torch.mtia.memory_allocated(0) == before


def test_close_cancels_queued_candidates(cache):
    pool = autotune.TuningPool(DEVICES[:1], warmup=0, repetitions=1)
    running = pool.submit(autotune.Candidate("hang", module=KERNELS, timeout_s=60.0))
    queued = [pool.submit(spin(1)) for _ in range(3)]
    building = pool.submit(autotune.Candidate("spin_us", build=lambda: time.sleep(0.5) or KERNELS,
                                              args=(autotune.value(ctypes.c_uint64(1)),)))
    pool.start()
    deadline = time.monotonic() + 30
    while not running.running() and time.monotonic() < deadline:
        time.sleep(0.01)
    pool.close()
    assert running.result().error == "the pool was closed"
    assert all(f.cancelled() for f in queued) and building.cancelled()
    assert_no_children()


def test_abandoned_pool_is_collected(cache):
    pool = autotune.TuningPool(DEVICES, warmup=0, repetitions=1)
    assert pool.submit(spin(1)).result().ok
    assert children()
    del pool
    gc.collect()
    assert_no_children()


def test_argument_checks():
    with pytest.raises(ValueError, match="relocation at byte 12"):
        autotune.struct(bytes(16), [(12, 0, 0)])
    with pytest.raises(TypeError, match="expected bytes or a ctypes instance"):
        autotune.value(3)
    with pytest.raises(TypeError, match="args\\[0\\]"):
        autotune.Candidate("k", args=(5,))
    with autotune.TuningPool(DEVICES[:1]) as pool:
        with pytest.raises(ValueError, match="uses buffer 1, but only 1 buffers"):
            pool.submit(autotune.Candidate("k", args=(autotune.ptr(1),)),
                        [torch.zeros(1, device="mtia:0")])
        with pytest.raises(TypeError, match="buffers\\[0\\] is not a tensor on an mtia device"):
            pool.submit(autotune.Candidate("k"), [torch.zeros(1)])
        with pytest.raises(ValueError, match="distinct configs"):
            pool.tune("k", [spin(1), spin(1)])
        with pytest.raises(ValueError, match="every candidate needs a config"):
            pool.tune("k", [autotune.Candidate("noop")])


def test_cache_entries(cache):
    key = autotune.cache_key("k", [(2, 3)], [torch.float16], 0)
    props = torch.mtia.get_device_properties(0)
    assert json.loads(key)["device"] == props["name"]
    assert json.loads(key)["capability"] == [props["major"], props["minor"]]
    assert autotune.cache_lookup(key) is None
    autotune.cache_store(key, {"tile": [32, 64]}, 1.5)
    assert autotune.cache_lookup(key) == {"tile": [32, 64]}
    entries = [p for p in cache.iterdir() if not p.name.startswith(".")]
    assert len(entries) == 1
    entries[0].write_text("{not json")
    assert autotune.cache_lookup(key) is None
    entries[0].write_text(json.dumps({"key": "another", "config": 1}))
    assert autotune.cache_lookup(key) is None
