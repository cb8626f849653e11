"""What the multi-process torch.distributed tests share: starting a test file's ranks as fresh
interpreters (a process forked after the runtime started cannot use it) and collecting every rank's
outcome, and the TCPStore the ranks meet on (a FileStore's waits poll: each collective step's store
barrier then costs milliseconds).

A test calls run_ranks(__file__, world, scenario, ...); the file, run as a script, gets
``scenario rank world store_path`` as its arguments, makes its store with tcp_store(rank, world,
store_path) and prints ``rank <rank> ok`` when it has checked everything.
"""

import os
import subprocess
import sys
import tempfile
import time

WORKER_TIMEOUT_S = 240


def run_ranks(script, world, scenario, env=None, rank_env=None):
    """Runs script's worker on world ranks (env added to every rank's environment, rank_env(rank) to
    each one's) and fails the test with every failing rank's output; once one rank has failed, the
    others, which would wait for it until the group's timeout, are stopped (they show exit -9)."""
    with tempfile.TemporaryDirectory() as tmp:
        base = dict(os.environ, **(env or {}))
        store = os.path.join(tmp, "store_port")
        # Output to files, not pipes: a rank writing more than a pipe holds would block.
        logs = [open(os.path.join(tmp, f"rank{rank}.log"), "w+") for rank in range(world)]
        procs = [
            subprocess.Popen([sys.executable, script, scenario, str(rank), str(world), store],
                             env=dict(base, **(rank_env(rank) if rank_env else {})),
                             stdout=logs[rank], stderr=subprocess.STDOUT)
            for rank in range(world)
        ]
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while any(p.poll() is None for p in procs) and time.monotonic() < deadline:
            if any(p.poll() not in (None, 0) for p in procs):
                break
            time.sleep(0.1)
        for p in procs:
            if p.poll() is None:
                p.kill()
        failures = []
        for rank, (p, log) in enumerate(zip(procs, logs)):
            rc = p.wait()
            log.seek(0)
            out = log.read()
            log.close()
            if rc != 0 or f"rank {rank} ok" not in out:
                failures.append(f"rank {rank} of {world} ({scenario}), exit {rc}:\n{out}")
        assert not failures, "\n".join(failures)


def tcp_store(rank, world, port_path):
    """Rank 0 serves a TCPStore on a port the system picks and publishes it in port_path (written
    whole, then renamed into place); the others wait for it and connect."""
    import torch.distributed as dist

    if rank == 0:
        store = dist.TCPStore("127.0.0.1", 0, world, True, wait_for_workers=False)
        with open(port_path + ".tmp", "w") as f:
            f.write(str(store.port))
        os.rename(port_path + ".tmp", port_path)
        return store
    deadline = time.monotonic() + WORKER_TIMEOUT_S
    while not os.path.exists(port_path):
        if time.monotonic() > deadline:
            raise TimeoutError(f"rank {rank}: rank 0 published no store port in {port_path}")
        time.sleep(0.05)
    with open(port_path) as f:
        return dist.TCPStore("127.0.0.1", int(f.read()), world, False)


def assert_equal(got, want, what, rank):
    """Fails with the first differing positions unless got (moved to the CPU) equals want exactly,
    dtype included."""
    got = got.cpu()
    assert got.dtype == want.dtype, (what, got.dtype, want.dtype)
    if not got.equal(want):
        bad = (got != want).nonzero()[:5].flatten().tolist()
        raise AssertionError(f"rank {rank}: {what}: differs at {bad}: got "
                             f"{got.flatten()[bad].tolist()}, want {want.flatten()[bad].tolist()}")
