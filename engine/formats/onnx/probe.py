"""The element types of a subgraph's outputs when the file leaves them out.

A Loop's or Scan's scan outputs become TensorArrays, whose element type is needed before the
loop is built; exporters often write the body's outputs without a type (onnxruntime infers
them). ``output_types`` builds the body once in a scratch graph, on placeholders of the
inputs' types and shapes and of every outer value it reads, and reads the types off the
result; the scratch graph is then dropped. Constants the enclosing graphs know stay known,
so shape-driven converters fold as they do in the real build."""

from __future__ import annotations

from engine import dtypes
from engine.formats.onnx import _tf as tf
from engine.framework.graph import Graph

__all__ = ["output_types"]


def _lookup(ctx, name: str):
    scope = ctx
    while scope is not None:
        if name in scope.values:
            return scope
        scope = scope.parent
    return None


class _OuterValues(dict):
    """The enclosing graphs' values, as placeholders in the scratch graph on first use."""

    def __init__(self, real, graph: Graph):
        super().__init__()
        self._real, self._graph = real, graph

    def __contains__(self, name) -> bool:
        return dict.__contains__(self, name) or _lookup(self._real, name) is not None

    def __getitem__(self, name):
        if not dict.__contains__(self, name):
            scope = _lookup(self._real, name)
            if scope is None:
                raise KeyError(name)
            t = scope.values[name]
            with self._graph.as_default():
                dict.__setitem__(self, name, tf.placeholder(t.dtype.base_dtype, shape=t.shape))
        return dict.__getitem__(self, name)


class _OuterKnown(dict):
    """The enclosing graphs' known constants."""

    def __init__(self, real):
        super().__init__()
        self._real = real

    def __contains__(self, name) -> bool:
        scope = _lookup(self._real, name)
        return scope is not None and name in scope.known

    def __getitem__(self, name):
        scope = _lookup(self._real, name)
        if scope is None or name not in scope.known:
            raise KeyError(name)
        return scope.known[name]


def output_types(ctx, g: dict, inputs: list, first: int) -> list[dtypes.DType]:
    """The types of ``g``'s outputs from index ``first`` on, ``g`` built on placeholders of
    ``inputs`` (``(dtype, shape)`` pairs) in a scratch graph."""
    scratch = Graph()
    with scratch.as_default():
        outer = ctx.__class__(ctx.opset, ctx.model_dir, opsets=ctx.opsets)
        outer.values = _OuterValues(ctx, scratch)
        outer.known = _OuterKnown(ctx)
        outer.depth = ctx.depth
        placeholders = [tf.placeholder(dt, shape=shape) for dt, shape in inputs]
        outs = outer.subgraph(g, placeholders)
    return [t.dtype.base_dtype for t in outs[first:]]
