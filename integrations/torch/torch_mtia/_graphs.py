"""MTIAGraph's lifetime. PyTorch 2.13's ``torch._C._MTIAGraph`` keeps only the hooks' handle and never
calls ``mtiagraphDestroy``: a graph, its executable and its private memory pool would live until the
process ends. ``install()`` ties the handle to the Python object: ``torch.mtia.MTIAGraph`` gains
``destroy()`` (explicit, idempotent) and destroys its graph when it is collected."""
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


_ORIGINAL_INIT = None


def install():
    global _ORIGINAL_INIT
    cls = torch._C._MTIAGraph
    if getattr(cls, "_torch_mtia_installed", False):
        return
    _ORIGINAL_INIT = cls.__init__
    cls.__init__ = _init
    cls.destroy = _destroy
    cls.__del__ = _del
    cls._torch_mtia_installed = True
