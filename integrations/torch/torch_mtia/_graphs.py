"""MTIAGraph: capture of the work queued on the current stream, and its replay (torch.mtia's shape)."""
from . import _C


class MTIAGraph:
    """A graph object. capture_begin(pool=None) captures the current stream's work (allocations come
    from the graph's private pool, or the shared pool named by ``pool``); capture_end() ends it and,
    unless keep_graph, instantiates it; replay() enqueues it on the current stream."""

    def __init__(self, keep_graph=False):
        self._handle = _C.graph_create(keep_graph)

    def capture_begin(self, pool=None):
        _C.graph_capture_begin(self._handle, (0, 0) if pool is None else tuple(pool))

    def capture_end(self):
        _C.graph_capture_end(self._handle)

    def instantiate(self):
        _C.graph_instantiate(self._handle)

    def replay(self):
        _C.graph_replay(self._handle)

    def reset(self):
        _C.graph_reset(self._handle)

    def pool(self):
        return tuple(_C.graph_pool(self._handle))

    def __del__(self):
        handle = getattr(self, "_handle", None)
        if handle is not None:
            _C.graph_destroy(handle)


def is_current_stream_capturing():
    """True while the current stream captures work into a graph."""
    return _C.is_current_stream_capturing()


def graph_pool_handle():
    """A fresh pool id that several graphs' captures can share."""
    return tuple(_C.graph_pool_handle())


class graph:  # noqa: N801 - torch.mtia's name
    """``with torch_mtia.graph(g, pool=None, stream=None):`` synchronizes, empties the cache and
    captures the block's work on ``stream`` (default: the current stream) into g."""

    def __init__(self, mtia_graph, pool=None, stream=None):
        from . import current_stream, stream as stream_context

        self.mtia_graph = mtia_graph
        self.pool = pool
        self.stream_context = stream_context(current_stream() if stream is None else stream)

    def __enter__(self):
        from . import empty_cache, synchronize

        synchronize()
        empty_cache()
        self.stream_context.__enter__()
        try:
            self.mtia_graph.capture_begin(self.pool)
        except BaseException:
            self.stream_context.__exit__(None, None, None)
            raise

    def __exit__(self, *exc):
        try:
            self.mtia_graph.capture_end()
        finally:
            self.stream_context.__exit__(*exc)
        return False
