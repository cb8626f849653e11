"""Streams and events of torch_mtia, shaped like torch.mtia's (and torch.cuda's) Stream and Event."""
import threading

import torch

from . import _C


def _device_index(device):
    from . import _index

    return _index(device)


class Stream:
    """A runtime stream. ``Stream(device=None, priority=0)`` takes one no other Stream object holds
    (one released before, else a new one); the object releases it when collected, and the runtime
    stream lives on for the process (it may still be current, or named by a torch.Stream), to be
    handed to a later Stream(). current_stream() and default_stream() return the runtime's own.
    ``stream_id`` is the runtime's int64 id; ``torch_stream`` is the same stream as a torch.Stream
    (Tensor.record_stream)."""

    def __init__(self, device=None, priority=0, *, _ref=None):
        if _ref is None:
            _ref = _C.create_stream(_device_index(device), priority)
            self._owned = priority
        else:
            self._owned = None
        self.stream_id, self.device_index = _ref
        self._contexts = threading.local()  # the StreamContexts of ``with self:``, per thread

    @property
    def _ref(self):
        return (self.stream_id, self.device_index)

    @property
    def device(self):
        return torch.device("privateuseone", self.device_index)

    @property
    def priority(self):
        return _C.stream_priority(self._ref)

    @property
    def torch_stream(self):
        bits = _C.pack_stream(self._ref)
        return torch._C.Stream(_cdata=bits) if hasattr(torch._C, "Stream") else bits

    def query(self):
        return _C.stream_query(self._ref)

    def synchronize(self):
        _C.stream_synchronize(self._ref)

    def record_event(self, event=None):
        event = Event() if event is None else event
        event.record(self)
        return event

    def wait_event(self, event):
        event.wait(self)

    def wait_stream(self, other):
        """Work queued on this stream later waits for the work queued on ``other`` so far."""
        self.wait_event(other.record_event())

    def __eq__(self, other):
        return isinstance(other, Stream) and self._ref == other._ref

    def __hash__(self):
        return hash(self._ref)

    def __repr__(self):
        return f"torch_mtia.Stream(device={self.device}, stream_id={self.stream_id})"

    def __enter__(self):
        # One context per entry, kept per thread: ``with s:`` may nest, and threads may share s.
        contexts = self._contexts.__dict__.setdefault("stack", [])
        context = StreamContext(self)
        result = context.__enter__()
        contexts.append(context)
        return result

    def __exit__(self, *exc):
        return self._contexts.stack.pop().__exit__(*exc)

    def __del__(self):
        if getattr(self, "_owned", None) is not None:
            try:
                _C.release_stream(self._ref, self._owned)
            except Exception:  # noqa: BLE001 - destructors must not raise; interpreter teardown
                pass


class Event:
    """An event; created on the device of the stream it is first recorded on."""

    def __init__(self, enable_timing=False, blocking=False, interprocess=False):
        if interprocess:
            raise NotImplementedError("torch_mtia: interprocess events are not supported")
        self._event = _C._Event(enable_timing, blocking)

    def record(self, stream=None):
        stream = current_stream() if stream is None else stream
        self._event.record(stream._ref)

    def wait(self, stream=None):
        stream = current_stream() if stream is None else stream
        self._event.wait(stream._ref)

    def query(self):
        return self._event.query()

    def synchronize(self):
        self._event.synchronize()

    def elapsed_time(self, end_event):
        """Milliseconds from this event's record to end_event's."""
        return self._event.elapsed_time(end_event._event)


def current_stream(device=None):
    return Stream(_ref=_C.current_stream(_device_index(device)))


def default_stream(device=None):
    return Stream(_ref=_C.default_stream(_device_index(device)))


def set_stream(stream):
    """Makes stream current on its device; its device becomes the current device."""
    if stream is not None:
        _C.set_stream(stream._ref)


class StreamContext:
    """Makes a stream current (and its device) inside ``with``; restores both afterwards."""

    def __init__(self, stream):
        self.stream = stream

    def __enter__(self):
        if self.stream is None:
            return None
        self._device = _C.current_device()
        self._previous_on_device = _C.current_stream(self.stream.device_index)
        self._previous_current = _C.current_stream(self._device)
        _C.set_stream(self.stream._ref)
        return self.stream

    def __exit__(self, *exc):
        if self.stream is None:
            return False
        _C.set_stream(self._previous_on_device)
        _C.set_stream(self._previous_current)
        return False


def stream(s):
    return StreamContext(s)
