"""MTIAGraph's lifetime. PyTorch 2.13's ``torch._C._MTIAGraph`` keeps only the hooks' handle and never
calls ``mtiagraphDestroy``: a graph, its executable and its private memory pool would live until the
process ends. ``install()`` ties the handle to the Python object: ``torch.mtia.MTIAGraph`` gains
``destroy()`` (explicit, idempotent) and destroys its graph when it is collected. Upstream's
``torch.mtia.graph`` leaves its capture stream current when ``capture_begin`` fails; ``install()``
makes it restore the caller's stream then."""
import torch

from . import _C


def _init(self, keep_graph=False):
    _ORIGINAL_INIT(self, keep_graph)
    try:
        self._mtia_handle = _C._graph_last_created()
    except AttributeError:  # a bare torch._C._MTIAGraph has no __dict__; torch.mtia.MTIAGraph has
        pass


def _destroy(self):
    """Releases the graph, its executable and its pool's reference now (waits for a replay in
    flight); later calls on this object raise."""
    handle = self.__dict__.pop("_mtia_handle", None)
    if handle is not None:
        _C._graph_destroy(handle)


def _del(self):
    try:
        _destroy(self)
    except Exception:  # noqa: BLE001 - a destructor must not raise (interpreter teardown)
        pass


def _graph_enter(self):
    try:
        _ORIGINAL_ENTER(self)
    except BaseException:
        # capture_begin refused (the stream context was entered just before it): the caller's
        # stream is current again, as torch.cuda.graph leaves it.
        if self.stream_ctx.src_prev_stream is not None:
            self.stream_ctx.__exit__(None, None, None)
        raise


_ORIGINAL_INIT = None
_ORIGINAL_ENTER = None


def install():
    global _ORIGINAL_INIT, _ORIGINAL_ENTER
    cls = torch._C._MTIAGraph
    if getattr(cls, "_torch_mtia_installed", False):
        return
    _ORIGINAL_INIT = cls.__init__
    cls.__init__ = _init
    cls.destroy = _destroy
    cls.__del__ = _del
    cls._torch_mtia_installed = True
    _ORIGINAL_ENTER = torch.mtia.graph.__enter__
    torch.mtia.graph.__enter__ = _graph_enter
