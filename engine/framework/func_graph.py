"""Function graphs: the bodies of ``cond`` branches and ``while_loop`` conditions and bodies.

A ``FuncGraph`` is a graph with explicit inputs (``Arg`` ops) and outputs. A tensor of an
enclosing graph used inside is *captured*: the function gets a new input for it and the op
that calls the function (``If``, ``While``) receives the outer tensor as an input. Variables,
collections and the random seed belong to the outermost graph.
"""

from __future__ import annotations

from engine.framework import registry
from engine.framework.graph import Graph, Operation, Tensor
from engine.tensor_shape import as_shape, unknown_shape

__all__ = ["FuncGraph", "copy_function_ops", "outermost_graph"]


def _arg_infer(o):
    shape = o._attrs["shape"]
    return [(o._attrs["dtype"], shape if shape is not None else unknown_shape())]


@registry.op(
    "Arg",
    infer=_arg_infer,
    attrs=(
        registry.Attr("dtype", "type"),
        registry.Attr("shape", "shape?"),
        registry.Attr("index", "int"),
    ),
    differentiable=False,
    flags=registry.OpFlags(stateful=True),
)
def _arg_kernel(xp, *, dtype, shape, index):  # noqa: ARG001 - a kernel's signature; an Arg never runs
    raise RuntimeError("Function inputs are fed by the calling op; an Arg never runs")


def outermost_graph(graph: Graph) -> Graph:
    while graph._is_function_graph:
        graph = graph.outer_graph
    return graph


class FuncGraph(Graph):
    """A graph with inputs and outputs, built to be called by a control-flow op."""

    _is_function_graph = True

    def __init__(self, name: str, outer_graph: Graph):
        super().__init__()
        self.name = name
        self.outer_graph = outer_graph
        self.inputs: list[Tensor] = []
        self.outputs: list[Tensor] = []
        self.control_outputs: list[Operation] = []
        self._captures: dict[Tensor, Tensor] = {}
        # For each captured input: the tensor in ``outer_graph`` the caller must pass.
        self.external_captures: list[Tensor] = []
        self.control_captures: list[Operation] = []
        self._gradient_override_map = dict(outer_graph._gradient_override_map)

    def __repr__(self) -> str:
        return f"<FuncGraph {self.name} inputs={len(self.inputs)} outputs={len(self.outputs)}>"

    # -- inputs ---------------------------------------------------------------------------
    def _new_arg(self, dtype, shape, name) -> Tensor:
        state = self._thread
        saved, state.name_stack = state.name_stack, ""
        saved_ctrl, state.control_scopes = state.control_scopes, []
        try:
            op = self._create_op(
                "Arg", [], {"dtype": dtype, "shape": shape, "index": len(self.inputs)}, name
            )
        finally:
            state.name_stack, state.control_scopes = saved, saved_ctrl
        t = op.outputs[0]
        self.inputs.append(t)
        return t

    def add_arg(self, dtype, shape, name: str = "arg") -> Tensor:
        """An explicit input (a loop variable); declare these before anything is captured."""
        if self._captures:
            raise RuntimeError("Explicit function inputs must be added before captures")
        return self._new_arg(dtype, as_shape(shape) if shape is not None else None, name)

    @property
    def captures(self) -> list[tuple[Tensor, Tensor]]:
        return list(self._captures.items())

    @property
    def num_explicit_inputs(self) -> int:
        return len(self.inputs) - len(self._captures)

    def capture(self, tensor: Tensor) -> Tensor:
        """The input of this function standing for the outer tensor ``tensor``."""
        if tensor.graph is self:
            return tensor
        inner = self._captures.get(tensor)
        if inner is not None:
            return inner
        outer = self.outer_graph
        if tensor.graph is outer:
            source = tensor
        elif outer._is_function_graph:
            source = outer.capture(tensor)
        else:
            raise ValueError(
                f"Tensor {tensor.name!r} belongs to a graph that does not enclose "
                f"the function {self.name!r}"
            )
        inner = self._new_arg(tensor.dtype, tensor.shape, "capture")
        self._captures[tensor] = inner
        self.external_captures.append(source)
        return inner

    def _capture(self, tensor: Tensor, _op_name: str) -> Tensor:
        return self.capture(tensor)

    def _as_control_op(self, c):
        if hasattr(c, "_as_graph_element") and not isinstance(c, (Tensor, Operation)):
            c = c._as_graph_element()
        if isinstance(c, Tensor):
            c = c._op
        if isinstance(c, Operation) and c._graph is not self:
            # An outer op: the calling op will depend on it instead.
            if c not in self.control_captures:
                self.control_captures.append(c)
            return None
        return super()._as_control_op(c)

    # -- state that belongs to the outermost graph ------------------------------------------
    @property
    def seed(self):
        return outermost_graph(self).seed

    @seed.setter
    def seed(self, value):
        outermost_graph(self).seed = value

    def add_to_collection(self, name, value) -> None:
        outermost_graph(self).add_to_collection(name, value)

    def get_collection(self, name, scope=None) -> list:
        return outermost_graph(self).get_collection(name, scope)

    def get_collection_ref(self, name) -> list:
        return outermost_graph(self).get_collection_ref(name)

    def get_all_collection_keys(self) -> list:
        return outermost_graph(self).get_all_collection_keys()

    @property
    def _engine_var_store(self):
        return getattr(outermost_graph(self), "_engine_var_store", None)

    @_engine_var_store.setter
    def _engine_var_store(self, value):
        outermost_graph(self)._engine_var_store = value


def copy_function_ops(src: FuncGraph, dst: Graph, input_map: dict) -> dict:
    """Recreates the ops of ``src`` in ``dst`` (the current graph context).

    ``input_map`` maps each input of ``src`` to a tensor of ``dst``; returns the mapping of
    every tensor of ``src`` to its copy.
    """
    mapping = dict(input_map)
    op_map: dict[Operation, Operation] = {}
    for op in src.get_operations():
        if op.type == "Arg":
            if op.outputs[0] not in mapping:
                raise ValueError(f"No value given for input {op.outputs[0].name} of {src.name}")
            continue
        inputs = [mapping[t] for t in op.inputs]
        new = dst._create_op(op.type, inputs, dict(op._attrs), op.name)
        controls = [op_map[c] for c in op._control_inputs if c in op_map]
        if controls:
            new._add_control_inputs(controls)
        op_map[op] = new
        for t, nt in zip(op.outputs, new.outputs):
            mapping[t] = nt
    return mapping
