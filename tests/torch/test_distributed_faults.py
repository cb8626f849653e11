"""Failures in torch_mtia's c10d backend "mtia" (same-host path): a peer killed with SIGKILL in the
middle of an all_reduce, a Work.wait(timeout) on a collective held back by a peer, abort.

Each test starts its ranks as fresh interpreters on a FileStore (as test_distributed.py does) running
this file's worker; the test itself is the killer: it waits until the ranks say they have started,
then kills the victim. The survivors must raise an error naming the dead rank within the group's
timeout (10 s here; the backend notices a dead process on this host within about 100 ms), find the
group broken afterwards, destroy it and exit 0, and mtia-smi must show nothing of any rank left.
The pytest process itself never uses the device.
"""

import json
import os
import signal
import subprocess
import sys
import tempfile
import time

import pytest

WORKER_TIMEOUT_S = 240
GROUP_TIMEOUT_S = 10


class _Ranks:
    """The ranks' processes, their logs (files: a pipe could fill up and block a rank) and a way to
    wait for a line in a rank's log."""

    def __init__(self, world, scenario, tmp, extra_env=None):
        env = dict(os.environ)
        env.update(extra_env or {})
        self.env = env
        store = os.path.join(tmp, "store")
        self.paths = [os.path.join(tmp, f"rank{rank}.log") for rank in range(world)]
        self.logs = [open(p, "w") for p in self.paths]
        self.procs = [
            subprocess.Popen([sys.executable, __file__, scenario, str(rank), str(world), store],
                             env=env, stdout=self.logs[rank], stderr=subprocess.STDOUT)
            for rank in range(world)
        ]
        self.scenario = scenario

    def output(self, rank):
        with open(self.paths[rank]) as f:
            return f.read()

    def wait_for(self, rank, text):
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while text not in self.output(rank):
            if any(p.poll() is not None for p in self.procs) or time.monotonic() > deadline:
                self.finish()
                raise AssertionError(f"rank {rank} never printed {text!r}:\n" + self.report())
            time.sleep(0.05)

    def finish(self):
        deadline = time.monotonic() + WORKER_TIMEOUT_S
        while any(p.poll() is None for p in self.procs) and time.monotonic() < deadline:
            time.sleep(0.05)
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        for log in self.logs:
            log.close()

    def report(self):
        return "\n".join(f"rank {r} ({self.scenario}), exit {p.returncode}:\n{self.output(r)}"
                         for r, p in enumerate(self.procs))

    def check_survivors(self, victim):
        bad = [r for r, p in enumerate(self.procs)
               if r != victim and (p.returncode != 0 or f"rank {r} ok" not in self.output(r))]
        assert not bad, self.report()
        assert self.procs[victim].returncode == -signal.SIGKILL, self.report()

    def check_nothing_left(self):
        # mtia-smi on the ranks' machine: no process of theirs, no device memory held (the registry
        # reclaims the dead rank's memory and IPC exports; the survivors released theirs).
        smi = subprocess.run([os.environ["MTIA_SMI"], "-q", "--json"], capture_output=True,
                             text=True, timeout=60, env=self.env)
        assert smi.returncode == 0, smi.stderr
        devices = json.loads(smi.stdout)["devices"]
        pids = {p.pid for p in self.procs}
        listed = {p["pid"] for d in devices for p in d["process_list"]}
        assert not listed & pids, smi.stdout
        assert all(d["memory_used_bytes"] == 0 for d in devices), smi.stdout


@pytest.mark.parametrize("path", ["same_host", "cross_host"])
def test_peer_killed_during_all_reduce(path):
    # Three ranks on a machine of their own with four devices; rank 1 dies: both survivors (rank 0
    # among them) must name it, on either path (cross-host: gloo's error names only an address).
    machine = os.environ.get("MTIA_SIM_MACHINE", "default") + "-faults3"
    with tempfile.TemporaryDirectory() as tmp:
        ranks = _Ranks(3, "killed_in_all_reduce", tmp,
                       {"MTIA_SIM_DEVICES": "4", "MTIA_SIM_MACHINE": machine,
                        "MTIA_DIST_STAGING_BYTES": "4096",
                        "MTIA_DIST_FORCE_CROSS_HOST": "1" if path == "cross_host" else "0"})
        for r in range(3):
            ranks.wait_for(r, f"rank {r} looping")
        ranks.procs[1].send_signal(signal.SIGKILL)
        ranks.finish()
        ranks.check_survivors(victim=1)
        for r in (0, 2):
            assert f"rank 1 (pid {ranks.procs[1].pid}," in ranks.output(r), ranks.report()
        ranks.check_nothing_left()


def test_wait_timeout_abort_and_dead_exporter():
    with tempfile.TemporaryDirectory() as tmp:
        ranks = _Ranks(2, "wait_abort_dead_exporter", tmp, {"MTIA_DIST_STAGING_BYTES": "65536"})
        ranks.wait_for(1, "rank 1 held")
        ranks.wait_for(0, "rank 0 waiting on the device")
        ranks.procs[1].send_signal(signal.SIGKILL)
        ranks.finish()
        ranks.check_survivors(victim=1)
        assert f"rank 1 (pid {ranks.procs[1].pid}," in ranks.output(0), ranks.report()
        ranks.check_nothing_left()


# ---- the worker (runs in each rank's process) ----

def _expect_raise(call, *fragments):
    try:
        call()
    except RuntimeError as e:
        missing = [f for f in fragments if f not in str(e)]
        assert not missing, f"{missing} not in: {e}"
        return str(e)
    raise AssertionError(f"did not raise (expected {fragments})")


def _worker(scenario, rank, world, store_path):
    from datetime import timedelta

    import torch
    import torch.distributed as dist

    import torch_mtia  # noqa: F401  (registers the backend)

    torch.mtia.set_device(rank)
    store = dist.FileStore(store_path, world)
    dist.init_process_group("mtia", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=GROUP_TIMEOUT_S))
    gloo = dist.new_group(backend="gloo")
    device = torch.device("mtia", rank)

    def say(text):
        print(f"rank {rank} {text}", flush=True)

    if scenario == "killed_in_all_reduce":
        # 256 KiB through 4 KiB staging buffers: 64 synchronised steps per all_reduce, so the
        # kill lands in the middle of one.
        t = torch.ones(1 << 16, device=device)
        dist.all_reduce(t)
        assert t.cpu().eq(world).all()
        say("looping")
        if rank == 1:
            while True:
                dist.all_reduce(t)
        try:
            while True:
                dist.all_reduce(t)
        except RuntimeError as e:
            failure = e
        error = str(failure)
        say(f"raised: {error}")
        cross_host = os.environ["MTIA_DIST_FORCE_CROSS_HOST"] == "1"
        step = "allreduce step" if cross_host else "all_reduce step"
        assert step in error and "rank 1 (pid" in error and "has exited" in error, error
        assert isinstance(failure, dist.DistBackendError), type(failure)
        # The group is broken: the next collective raises at once, naming the first failure.
        _expect_raise(lambda: dist.all_reduce(t), "process group is broken", "rank 1 (pid")
        _expect_raise(lambda: dist.barrier(), "process group is broken")
        # The survivor's stream does not hang on the dead peer's events.
        torch.mtia.synchronize()
    elif scenario == "wait_abort_dead_exporter":
        # 1. Work.wait(timeout) on a collective held back by a peer: rank 1's device sleeps before
        # its part; rank 0's wait with a timeout raises, naming the collective and the rank; the
        # collective completes later with the right sum, and the group goes on.
        host = torch.arange(40000, dtype=torch.float32) * (rank + 1)
        ref = host.clone()
        dist.all_reduce(ref, group=gloo)
        t = host.to(device)
        # Both ranks leave the barrier together, so that rank 1's device still sleeps when rank
        # 0 waits, however slowly rank 0 got here (a second's skew is common under TSan).
        dist.barrier(group=gloo)
        if rank == 1:
            torch_mtia._C.sleep_on_stream(3_000_000)
        work = dist.all_reduce(t, async_op=True)
        if rank == 0:
            _expect_raise(lambda: work.wait(timeout=timedelta(milliseconds=100)),
                          "rank 0", "all_reduce", "did not complete within 100 ms")
            assert not work.is_success()
            assert work.exception() is not None
            # The failure stays with the work.
            _expect_raise(lambda: work.wait(), "did not complete within 100 ms")
        else:
            assert work.wait()
        torch.mtia.synchronize()
        assert torch.equal(t.cpu(), ref)
        work = dist.all_reduce(t, async_op=True)
        assert work.wait(timeout=timedelta(seconds=GROUP_TIMEOUT_S))
        assert work.is_completed() and work.is_success() and work.exception() is None
        assert torch.equal(t.cpu(), ref * world)

        # 2. abort: a group whose collective is blocked (its peer never comes) is aborted from
        # another thread; the blocked collective raises, and so do later ones.
        import threading

        sub = dist.new_group(backend="mtia")
        x = torch.ones(8, device=device)
        dist.all_reduce(x, group=sub)  # sets the group up on both ranks
        if rank == 0:
            aborter = threading.Timer(0.5, sub.abort)
            aborter.start()
            _expect_raise(lambda: dist.all_reduce(x, group=sub), "rank 0", "aborted")
            aborter.join()
        # Rank 1 ends its side only now: its events must stay until rank 0 is blocked at the store.
        dist.barrier(group=gloo)
        if rank == 1:
            sub.abort()
        _expect_raise(lambda: dist.all_reduce(x, group=sub), "aborted")
        _expect_raise(lambda: dist.broadcast(x, 0, group=sub), "aborted")

        # A group's first collective sets up its communicator: one that a peer never joins names
        # the peer once the group's timeout passes.
        late = dist.new_group(backend="mtia", timeout=timedelta(seconds=1))
        if rank == 0:
            _expect_raise(lambda: dist.all_reduce(x, group=late), "rank 1 did not publish",
                          "within 1000 ms")
        dist.barrier(group=gloo)

        # 3. A peer that dies while the survivor's stream waits for its IPC event: rank 1's
        # device sleeps before its part of an all_reduce; rank 0's stream waits on rank 1's
        # event; rank 1 is killed; the wait ends (mtia_ipc.h) and rank 0's synchronize returns;
        # its next collective raises naming rank 1.
        y = torch.ones(1000, device=device)
        if rank == 1:
            torch_mtia._C.sleep_on_stream(120_000_000)
        dist.all_reduce(y)
        if rank == 1:
            say("held")
            torch.mtia.synchronize()  # killed in here
            raise AssertionError("rank 1 was not killed")
        say("waiting on the device")
        torch.mtia.synchronize()
        error = _expect_raise(lambda: dist.all_reduce(y), "rank 1 (pid", "has exited")
        say(f"raised: {error}")
    else:
        raise ValueError(scenario)
    dist.destroy_process_group()
    say("ok")


if __name__ == "__main__":
    _worker(sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
