"""TF1 while loops (``Enter``/``Merge``/``Switch``/``LoopCond``/``NextIteration``/``Exit``)
as functional ``While`` nodes (see ``functionalize.py``).

Each node is placed in a frame (``Enter`` names the frame it moves a value into, ``Exit``
leaves to the parent's). Frames are converted innermost first: the frame's ``Merge`` nodes
are the loop variables; the nodes computing ``LoopCond``'s input from them become the
``cond`` function, the nodes from the loop ``Switch``'s true output to each
``NextIteration`` the ``body``; loop invariants (constant ``Enter``) and values read from
outside become captured inputs, passed through the body unchanged."""

from __future__ import annotations

from engine.formats.tensorflow.nodes import (
    FunctionBody,
    Node,
    canonical,
    control_inputs,
    data_inputs,
    output_index,
    source,
)
from engine.formats.tensorflow.proto import attr_value_pb2
from engine.formats.tensorflow.tensors import TFFormatError
from engine.formats.tensorflow.v1_flow_common import (
    DT_VARIANT,
    V1_CONTROL_OPS,
    Names,
    UnsupportedError,
    arg_node,
    base_op,
    identity_attrs,
    is_tensor_array,
    mark,
    out_type,
    topological,
    type_enum,
    without_args,
)
from engine.formats.tensorflow.v1_flow_conds import functionalize_conds

__all__ = ["functionalize_loops"]


def _frame_name(node: Node) -> str:
    av = node.attrs.get("frame_name")
    if av is None or av.WhichOneof("value") != "s":
        raise TFFormatError(f"Enter node {node.name!r} has no frame_name")
    return av.s.decode("utf-8", "replace")


def _assign_frames(by_name: dict) -> tuple[dict, dict]:
    """(frame of each node (None: the graph's own), parent of each frame)."""
    frame: dict[str, str | None] = {}
    parent: dict[str, str | None] = {}
    for name in topological(by_name, skip_back_edges=True):
        n = by_name[name]
        op = base_op(n.op)
        ins = [
            frame[source(r)]
            for r in n.inputs
            if source(r) in frame
            and not (op == "Merge" and base_op(by_name[source(r)].op) == "NextIteration")
        ]
        data = data_inputs(n)
        outer = frame.get(source(data[0])) if data else None
        if op == "Enter":
            f = _frame_name(n)
            if parent.setdefault(f, outer) != outer:
                raise TFFormatError(f"loop frame {f!r} is entered from two different frames")
            frame[name] = f
        elif op == "Exit":
            if outer is None:
                raise TFFormatError(f"Exit node {name!r} is not inside a loop")
            frame[name] = parent[outer]
        else:
            inner = {f for f in ins if f is not None}
            if len(inner) > 1:
                raise TFFormatError(
                    f"node {name!r} reads values from two loop frames: {sorted(inner)}"
                )
            frame[name] = inner.pop() if inner else None
    return frame, parent


def _depth(f, parent) -> int:
    d = 0
    while f is not None:
        f, d = parent[f], d + 1
    return d


def functionalize_loops(nodes: list, where: str) -> list:
    """``nodes`` with every convertible loop frame as a ``While``; a frame that cannot be
    converted keeps its nodes, marked with the reason."""
    by_name = {n.name: n for n in nodes}
    frame, parent = _assign_frames(by_name)
    names = Names(by_name)
    for f in sorted(parent, key=lambda f: -_depth(f, parent)):
        members = {k: by_name[k] for k, v in frame.items() if v == f and k in by_name}
        exits = [
            n
            for n in by_name.values()
            if base_op(n.op) == "Exit"
            and data_inputs(n)
            and frame.get(source(data_inputs(n)[0])) == f
        ]
        try:
            if any(n.op.startswith("Ref") for n in members.values()):
                raise UnsupportedError("the loop passes reference variables (Ref* ops)")
            while_node, outs = _Loop(f, members, exits, by_name).build(names)
        except UnsupportedError as e:
            for n in list(members.values()) + exits:
                if n.op in V1_CONTROL_OPS:
                    by_name[n.name] = mark(n, str(e))
            continue
        for k in list(members) + [e.name for e in exits]:
            del by_name[k]
            frame.pop(k, None)
        for name, n in list(by_name.items()):
            bad = [r for r in n.inputs if source(r) in members]
            if any(not r.startswith("^") for r in bad):
                raise TFFormatError(
                    f"{where}: node {name!r} reads {bad[0]!r} from inside loop {f!r} "
                    "without an Exit"
                )
            if bad:  # ordering on work inside the loop: on the whole loop now
                fixed = [r for r in n.inputs if source(r) not in members]
                by_name[name] = Node(name, n.op, fixed + ["^" + while_node.name], n.attrs)
        for o in [while_node, *outs]:
            by_name[o.name] = o
            frame[o.name] = parent[f]
    return list(by_name.values())


class _Loop:
    """One frame's structure: loop variables (merge, enter, next_iteration, switch), the
    LoopCond, invariant Enters and the Exits."""

    def __init__(self, frame: str, members: dict, exits: list, by_name: dict):
        self.frame, self.members, self.exits, self.by_name = frame, members, exits, by_name
        conds = [n for n in members.values() if n.op == "LoopCond"]
        if len(conds) != 1:
            raise UnsupportedError(
                f"loop frame {frame!r} has {len(conds)} LoopCond nodes, expected 1"
            )
        self.loop_cond = conds[0]
        switch_of = {}  # the loop's Switches (on LoopCond); others belong to conds in the body
        for n in members.values():
            data = data_inputs(n)
            if n.op == "Switch" and len(data) == 2 and source(data[1]) == self.loop_cond.name:
                switch_of[source(data[0])] = n
        self.loop_vars = [self._loop_var(m, switch_of) for m in members.values()]
        self.loop_vars = [lv for lv in self.loop_vars if lv is not None]
        entered = {lv[1].name for lv in self.loop_vars}
        self.invariant = {
            n.name: n for n in members.values() if n.op == "Enter" and n.name not in entered
        }
        self.structure = {self.loop_cond.name, *self.invariant}
        for lv in self.loop_vars:
            self.structure.update(x.name for x in lv)
        self.var_of = {lv[0].name: i for i, lv in enumerate(self.loop_vars)}
        self.body_var = {lv[3].name: i for i, lv in enumerate(self.loop_vars)}
        self.exit_index = {}
        for e in exits:
            ref = data_inputs(e)[0]
            if source(ref) not in self.body_var or output_index(ref) != 0:
                raise UnsupportedError(f"Exit {e.name!r} does not leave through a loop Switch")
            self.exit_index[e.name] = self.body_var[source(ref)]

    def _loop_var(self, m: Node, switch_of: dict):
        if m.op != "Merge":
            return None
        data = data_inputs(m)
        ops = {
            self.by_name[source(r)].op: self.by_name[source(r)]
            for r in data
            if source(r) in self.by_name
        }
        if "NextIteration" not in ops:
            return None  # a cond's Merge inside the loop
        if len(data) != 2 or set(ops) != {"Enter", "NextIteration"}:
            raise UnsupportedError(
                f"loop Merge {m.name!r} does not join an Enter and a NextIteration"
            )
        if m.name not in switch_of:
            raise UnsupportedError(f"loop Merge {m.name!r} has no Switch on the loop condition")
        return m, ops["Enter"], ops["NextIteration"], switch_of[m.name]

    def build(self, names: Names) -> tuple[Node, list[Node]]:
        tag = names.fresh(self.frame.rsplit("/while_context", 1)[0] + "/functional_while")
        args = _LoopArgs(self, tag)
        cond_nodes = self._collect(data_inputs(self.loop_cond)[:1], args.rewriter(False))
        cond_out = canonical(args.rewriter(False)(data_inputs(self.loop_cond)[0]))
        roots = [data_inputs(lv[2])[0] for lv in self.loop_vars]
        body_nodes = self._collect(roots, args.rewriter(True))
        body_outs = [canonical(args.rewriter(True)(r)) for r in roots]
        # frame nodes nothing reads (side effects each iteration): the body's control outputs
        used = {n.name for n in cond_nodes + body_nodes}
        read = {source(r) for n in self.members.values() for r in n.inputs}
        # (a Switch nothing reads, such as a TensorArray handle's once its ops take the flow
        # instead, does nothing)
        sinks = [
            k
            for k, n in self.members.items()
            if k not in self.structure | used | read and n.op not in ("Switch", "Merge")
        ]
        known = {n.name for n in body_nodes}
        extra = self._collect(sinks, args.rewriter(True))
        body_nodes += [n for n in extra if n.name not in known]
        arg_nodes = args.nodes()
        passed = [f"{a.name}:0" for a in arg_nodes[len(self.loop_vars) :]]
        cond_fn = FunctionBody(
            tag + "/cond",
            arg_nodes,
            without_args(functionalize_conds(arg_nodes + cond_nodes)),
            [cond_out],
            [],
        )
        body_nodes = without_args(functionalize_conds(arg_nodes + body_nodes))
        remaining = {n.name for n in body_nodes}  # conds replace their branches' nodes
        sinks = [k for k in sinks if k in remaining]
        body_fn = FunctionBody(tag + "/body", arg_nodes, body_nodes, body_outs + passed, sinks)
        pi = self.loop_vars[0][1].attrs.get("parallel_iterations") if self.loop_vars else None
        attrs = {
            "cond": cond_fn,
            "body": body_fn,
            "parallel_iterations": pi or attr_value_pb2.AttrValue(i=10),
        }
        while_node = Node(tag, "While", args.inputs + args.controls, attrs)
        outs = [
            Node(
                e.name,
                "Identity",
                [f"{tag}:{self.exit_index[e.name]}", *control_inputs(e)],
                identity_attrs(e),
            )
            for e in self.exits
        ]
        return while_node, outs

    def _collect(self, roots, rewrite) -> list[Node]:
        """The frame's nodes ``roots`` need, inputs rewritten; stops at the loop's own
        structure (whose outputs ``rewrite`` maps to args) and outside the frame."""
        seen: dict[str, Node] = {}
        stack = [source(r) for r in roots]
        while stack:
            name = stack.pop()
            if name in seen or name not in self.members or name in self.structure:
                continue
            seen[name] = self.members[name]
            stack.extend(source(r) for r in seen[name].inputs)
        out = []
        for name, n in seen.items():
            inputs = [rewrite(r) for r in n.inputs]
            out.append(Node(name, n.op, [r for r in inputs if r is not None], n.attrs))
        return out


class _LoopArgs:
    """The While's inputs: the loop variables' initial values, then (as first read) the
    invariants and outside values the loop reads; one function arg each."""

    def __init__(self, loop: _Loop, tag: str):
        self.loop, self.tag = loop, tag
        self.types = []
        self.inputs = []
        self.controls = []
        self.captured: dict[str, int] = {}
        for _, enter, _, _ in loop.loop_vars:
            ref = data_inputs(enter)[0]
            self.types.append(
                DT_VARIANT if is_tensor_array(ref, loop.by_name) else type_enum(enter)
            )
            self.inputs.append(ref)
            self._add_controls(enter)

    def _add_controls(self, node: Node) -> None:
        self.controls.extend(c for c in control_inputs(node) if c not in self.controls)

    def name(self, i: int) -> str:
        return f"{self.tag}/arg/{i}:0"

    def capture(self, ref: str, enter: Node | None = None):
        if ref.startswith("^"):
            if "^" + source(ref) not in self.controls:
                self.controls.append("^" + source(ref))
            return None
        ref = canonical(ref)
        if ref not in self.captured:
            self.captured[ref] = len(self.types)
            if is_tensor_array(ref, self.loop.by_name):
                self.types.append(DT_VARIANT)
            elif enter is not None:
                self.types.append(type_enum(enter))
            else:
                self.types.append(out_type(self.loop.by_name.get(source(ref))))
            self.inputs.append(ref)
            if enter is not None:
                self._add_controls(enter)
        return self.name(self.captured[ref])

    def rewriter(self, in_body: bool):
        loop = self.loop

        def rewrite(ref: str):
            s = source(ref)
            if s not in loop.members:
                return self.capture(ref)
            if s not in loop.structure:
                return ref
            if ref.startswith("^"):
                return None  # ordering on the loop's own structure: args are ready
            n = loop.members[s]
            if n.op == "Merge" and output_index(ref) == 0:
                return self.name(loop.var_of[s])
            if s in loop.invariant:
                return self.capture(data_inputs(n)[0], enter=n)
            if in_body and n.op == "Switch" and output_index(ref) == 1:
                return self.name(loop.body_var[s])
            raise UnsupportedError(
                f"node reads {ref!r} of loop frame {loop.frame!r} in a way a While cannot express"
            )

        return rewrite

    def nodes(self) -> list[Node]:
        return [arg_node(f"{self.tag}/arg/{i}", t, i) for i, t in enumerate(self.types)]
