"""Stream order for backward passes over MTIA tensors.

PyTorch 1.13's autograd engine orders backward work by streams for CUDA only. Backward nodes of an MTIA
tensor run on the device's engine thread, on its default stream, with no order against the stream that
was current where ``backward()`` was called (where the forward pass ran, usually), nor against what that
stream does next (read the gradients, step an optimizer). ``install()`` wraps the engine's
``run_backward`` (used by ``torch.autograd.backward``, ``Tensor.backward`` and ``torch.autograd.grad``)
so that each device's default stream first waits for the caller's current stream and stands in for it
on the caller's thread during the pass (the engine runs some nodes there), and the caller's stream then
waits for the default stream: the gradients are ready on the caller's stream, as with CUDA.
Backward called from C++ (torch::autograd::backward) does not pass through it.
"""
from torch.autograd.variable import Variable

from . import _C


class _StreamOrderedEngine:
    """The engine's Python object with run_backward fenced; everything else is the engine's own."""

    def __init__(self, engine):
        self._engine = engine

    def run_backward(self, *args, **kwargs):
        fence = _C.backward_fence_begin()
        try:
            return self._engine.run_backward(*args, **kwargs)
        finally:
            _C.backward_fence_end(fence)

    def __getattr__(self, name):
        return getattr(self._engine, name)


def install():
    """Fences the engine's run_backward once per process (a second call changes nothing)."""
    if not isinstance(Variable._execution_engine, _StreamOrderedEngine):
        Variable._execution_engine = _StreamOrderedEngine(Variable._execution_engine)
