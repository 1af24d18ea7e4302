"""TF1's dataflow control flow as the engine's functional ``If`` and ``While``.

TensorFlow 1.x builds ``tf.cond`` and ``tf.while_loop`` (and everything made of them:
``dynamic_rnn``, ``map_fn``, batch norm on a training flag) from dataflow primitives:
``Switch`` forwards its input to one of two outputs and marks the other "dead"; an op with a
dead input is dead; ``Merge`` forwards whichever input is alive. Loops add frames: ``Enter``
moves a value into a loop's frame, ``NextIteration`` carries it to the next iteration,
``LoopCond`` decides, ``Exit`` leaves. Frozen graphs and TF1 SavedModels keep this form.

The engine has TF2's functional form instead, so a graph is rewritten before import, as TF's
own ``functionalize_control_flow`` pass does for XLA:

1. ``tensor_arrays``: TF1 TensorArray ops take a handle and a "flow" and output both; the
   engine's TensorArray is one value threaded through its ops, so ``TensorArrayV3:0`` and
   ``:1`` both become that value and each op reads the flow it was given (which orders it).
2. Loops, innermost frame first: the frame's ``Merge`` nodes are the loop variables; the
   nodes that compute ``LoopCond``'s input from them become the ``cond`` function, the nodes
   from ``Switch``'s true output to each ``NextIteration`` the ``body``; constant ``Enter``
   nodes (loop invariants) and values read from outside are captured. Each ``Exit`` becomes
   an ``Identity`` of the ``While`` output, so its name keeps working.
3. Conds, innermost first: every node gets its branch condition, the set of (predicate,
   branch) pairs of the ``Switch`` outputs it depends on; a ``Merge`` joins two inputs whose
   conditions differ in one predicate's branch. The nodes under each branch become an ``If``
   function; values entering through a ``Switch`` (or read directly) are its inputs; each
   ``Merge`` becomes an ``Identity`` of an ``If`` output. Conds that share nodes (one
   ``tf.cond`` with several outputs) become one ``If``.

What cannot be converted (reference-variable forms like ``RefEnter``, the stacks of TF1 loop
gradients, a ``Merge`` of something other than two branches) is left in place with the reason
attached, and the import reports it with the op types the engine lacks.
"""

from __future__ import annotations

import collections

from engine.formats.tensorflow.proto import attr_value_pb2
from engine.formats.tensorflow.tensors import TFFormatError

__all__ = ["V1_CONTROL_OPS", "WHY_ATTR", "functionalize", "tensor_arrays"]

V1_CONTROL_OPS = frozenset(
    [
        "Switch",
        "Merge",
        "Enter",
        "Exit",
        "NextIteration",
        "LoopCond",
        "RefSwitch",
        "RefMerge",
        "RefEnter",
        "RefExit",
        "RefNextIteration",
        "RefSelect",
    ]
)
WHY_ATTR = "_flowserve_not_functionalized"  # the reason a v1 control-flow node stayed

_ARG = "_FunctionArg"  # graph_def's function input marker (kept in sync there)
_DT_VARIANT = 21
_MAX_TRACE = 256


class _UnsupportedError(Exception):
    """This loop or cond cannot be converted; its nodes stay, with the reason."""


def _node(name, op, inputs, attrs):
    from engine.formats.tensorflow.graph_def import Node

    return Node(name, op, list(inputs), attrs)


def _src(ref: str) -> str:
    return (ref[1:] if ref.startswith("^") else ref).split(":")[0]


def _index(ref: str) -> int:
    parts = ref.split(":")
    return int(parts[1]) if len(parts) > 1 else 0


def _data(node) -> list[str]:
    return [i for i in node.inputs if not i.startswith("^")]


def _controls(node) -> list[str]:
    return [i for i in node.inputs if i.startswith("^")]


def _canon(ref: str) -> str:
    """``name:0`` for ``name``; control refs unchanged."""
    if ref.startswith("^"):
        return ref
    return ref if ":" in ref else ref + ":0"


class _Names:
    """Fresh node names that collide with nothing in the graph."""

    def __init__(self, taken):
        self.taken = set(taken)

    def fresh(self, base: str) -> str:
        name, k = base, 1
        while name in self.taken:
            name = f"{base}_{k}"
            k += 1
        self.taken.add(name)
        return name


# -----------------------------------------------------------------------------------------
# 1. TensorArrays
# -----------------------------------------------------------------------------------------

# TF op -> (positions of TF's inputs the engine op takes, in order; TF's flow input first)
_TA_INPUTS = {
    "TensorArrayWriteV3": (3, 1, 2),  # (handle, index, value, flow_in)
    "TensorArrayReadV3": (2, 1),  # (handle, index, flow_in)
    "TensorArrayGatherV3": (2, 1),  # (handle, indices, flow_in)
    "TensorArrayScatterV3": (3, 1, 2),  # (handle, indices, value, flow_in)
    "TensorArraySplitV3": (3, 1, 2),  # (handle, value, lengths, flow_in)
    "TensorArraySizeV3": (1,),  # (handle, flow_in)
    "TensorArrayConcatV3": (1,),  # (handle, flow_in) -> (value, lengths)
}


def tensor_arrays(nodes: list) -> list:
    """TF1 TensorArray ops (handle + flow) as the engine's (one threaded value)."""
    if not any(n.op.startswith("TensorArray") for n in nodes):
        return nodes
    created = {n.name for n in nodes if n.op == "TensorArrayV3"}
    concat = {n.name for n in nodes if n.op == "TensorArrayConcatV3"}

    def fix(ref: str, user: str) -> str:
        if ref.startswith("^"):
            return ref
        src = _src(ref)
        if src in created:
            return src + ":0"  # handle and flow are the same value
        if src in concat and _index(ref) == 1:
            raise TFFormatError(
                f"node {user!r} reads the lengths output of TensorArrayConcatV3 {src!r}, "
                "which flowserve does not produce"
            )
        return ref

    out = []
    for n in nodes:
        inputs = [fix(i, n.name) for i in n.inputs]
        if n.op == "TensorArrayCloseV3":
            out.append(_node(n.name, "NoOp", _controls(n), {}))
            continue
        if n.op == "TensorArrayGradV3":
            raise TFFormatError(
                f"node {n.name!r}: TF1 TensorArray gradients (TensorArrayGradV3) are not "
                "supported in imported graphs"
            )
        order = _TA_INPUTS.get(n.op)
        if order is not None:
            data = [i for i in inputs if not i.startswith("^")]
            if len(data) != max(order) + 1:
                raise TFFormatError(
                    f"node {n.name!r} ({n.op}) has {len(data)} inputs, expected {max(order) + 1}"
                )
            inputs = [data[k] for k in order] + [i for i in inputs if i.startswith("^")]
        attrs = n.attrs
        if n.op in ("TensorArrayReadV3", "TensorArrayGatherV3") and "element_shape" not in attrs:
            unknown = attr_value_pb2.AttrValue()
            unknown.shape.unknown_rank = True
            attrs = {**attrs, "element_shape": unknown}  # TF's read has none: any shape
        out.append(_node(n.name, n.op, inputs, attrs))
    return out


# -----------------------------------------------------------------------------------------
# 2. While loops
# -----------------------------------------------------------------------------------------


def _frame_name(node) -> str:
    av = node.attrs.get("frame_name")
    if av is None or av.WhichOneof("value") != "s":
        raise _UnsupportedError(f"Enter node {node.name!r} has no frame_name")
    return av.s.decode("utf-8", "replace")


def _base(op: str) -> str:
    """``Enter`` for ``RefEnter`` (and so on): the structure is the same."""
    return op[3:] if op.startswith("Ref") and op in V1_CONTROL_OPS else op


def _topological(by_name: dict, skip_back_edges: bool) -> list[str]:
    """Node names with inputs first; a ``Merge``'s ``NextIteration`` inputs are back edges."""
    deps = {}
    users = collections.defaultdict(list)
    for name, n in by_name.items():
        ds = set()
        for ref in n.inputs:
            s = _src(ref)
            if s not in by_name or s == name:
                continue
            back = _base(n.op) == "Merge" and _base(by_name[s].op) == "NextIteration"
            if skip_back_edges and back:
                continue
            ds.add(s)
        deps[name] = len(ds)
        for s in ds:
            users[s].append(name)
    ready = [name for name, k in deps.items() if k == 0]
    order = []
    while ready:
        name = ready.pop()
        order.append(name)
        for u in users[name]:
            deps[u] -= 1
            if deps[u] == 0:
                ready.append(u)
    if len(order) != len(by_name):
        stuck = sorted(name for name, k in deps.items() if k > 0)[:3]
        raise TFFormatError(f"the graph has a cycle outside while loops (e.g. at {stuck})")
    return order


def _assign_frames(by_name: dict) -> tuple[dict, dict]:
    """(frame of each node (None: the graph's own), parent of each frame)."""
    frame: dict[str, str | None] = {}
    parent: dict[str, str | None] = {}
    for name in _topological(by_name, skip_back_edges=True):
        n = by_name[name]
        op = _base(n.op)
        ins = [
            frame[_src(r)]
            for r in n.inputs
            if _src(r) in frame
            and not (op == "Merge" and _base(by_name[_src(r)].op) == "NextIteration")
        ]
        data = _data(n)
        outer = frame.get(_src(data[0])) if data else None
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


def _is_tensor_array(ref: str, by_name: dict) -> bool:
    """Whether ``ref`` carries a TensorArray (after ``tensor_arrays``)."""
    for _ in range(_MAX_TRACE):
        n = by_name.get(_src(ref))
        if n is None:
            return False
        if n.op in ("TensorArrayV3", "TensorArrayWriteV3", "TensorArrayScatterV3"):
            return True
        if n.op == "TensorArraySplitV3":
            return True
        if n.op == _ARG:
            return n.attrs.get("type") == _DT_VARIANT
        data = _data(n)
        if n.op in ("Enter", "Exit", "Identity", "NextIteration", "Switch", "Merge") and data:
            ref = data[0]
            continue
        if n.op == "While" and _index(ref) < len(data):
            ref = data[_index(ref)]  # a loop variable keeps its kind
            continue
        return False
    return False


def _without_args(nodes: list) -> list:
    return [n for n in nodes if n.op != _ARG]


def _t(node) -> dict:
    """The ``T`` attr alone (what an Identity standing for ``node`` carries)."""
    return {"T": node.attrs["T"]} if "T" in node.attrs else {}


def _arg(name: str, enum: int, index: int):
    return _node(name, _ARG, [], {"type": int(enum), "shape": None, "index": index})


def _type_enum(node) -> int:
    av = node.attrs.get("T")
    if av is None or av.WhichOneof("value") != "type":
        raise _UnsupportedError(f"node {node.name!r} ({node.op}) has no type attr T")
    if av.type > 100:
        raise _UnsupportedError(f"node {node.name!r} carries a reference value")
    return int(av.type)


def _collect(roots, member, structure, rewrite):
    """The member nodes ``roots`` (refs) need, inputs rewritten by ``rewrite``; stops at
    ``structure`` nodes (whose refs ``rewrite`` maps) and at non-members (captured)."""
    seen: dict[str, object] = {}
    stack = [_src(r) for r in roots]
    while stack:
        name = stack.pop()
        if name in seen or name not in member or name in structure:
            continue
        n = member[name]
        seen[name] = n
        stack.extend(_src(r) for r in n.inputs)
    out = []
    for name, n in seen.items():
        inputs = []
        for r in n.inputs:
            new = rewrite(r)
            if new is not None:
                inputs.append(new)
        out.append(_node(name, n.op, inputs, n.attrs))
    return out


def _loop(frame: str, members: dict, exits: list, by_name: dict, names: _Names):
    """The While node, the Exit identities, and the names it replaces, for one frame."""
    from engine.formats.tensorflow.graph_def import FunctionBody

    merges = [n for n in members.values() if n.op == "Merge"]
    conds = [n for n in members.values() if n.op == "LoopCond"]
    if len(conds) != 1:
        raise _UnsupportedError(f"loop frame {frame!r} has {len(conds)} LoopCond nodes, expected 1")
    loop_cond = conds[0]
    switch_of = {}  # the loop's Switches (on LoopCond); others belong to conds in the body
    for n in members.values():
        data = _data(n)
        if n.op == "Switch" and len(data) == 2 and _src(data[1]) == loop_cond.name:
            switch_of[_src(data[0])] = n
    loop_vars = []  # (merge, enter, next_iteration, switch)
    for m in merges:
        data = _data(m)
        ops = {by_name[_src(r)].op: by_name[_src(r)] for r in data if _src(r) in by_name}
        if "NextIteration" not in ops:
            continue  # a cond's Merge inside the loop
        if len(data) != 2 or set(ops) != {"Enter", "NextIteration"}:
            raise _UnsupportedError(
                f"loop Merge {m.name!r} does not join an Enter and a NextIteration"
            )
        if m.name not in switch_of:
            raise _UnsupportedError(f"loop Merge {m.name!r} has no Switch on the loop condition")
        loop_vars.append((m, ops["Enter"], ops["NextIteration"], switch_of[m.name]))
    entered = {lv[1].name for lv in loop_vars}
    invariants = [n for n in members.values() if n.op == "Enter" and n.name not in entered]
    exit_index = {}
    for e in exits:
        sw = _src(_data(e)[0])
        k = next((i for i, lv in enumerate(loop_vars) if lv[3].name == sw), None)
        if k is None or _index(_data(e)[0]) != 0:
            raise _UnsupportedError(f"Exit {e.name!r} does not leave through a loop Switch")
        exit_index[e.name] = k

    n_vars = len(loop_vars)
    tag = names.fresh(frame.rsplit("/while_context", 1)[0] + "/functional_while")
    arg_names = []
    types = []
    for i, (_, enter, _, _) in enumerate(loop_vars):
        arg_names.append(f"{tag}/arg/{i}")
        ta = _is_tensor_array(_data(enter)[0], by_name)
        types.append(_DT_VARIANT if ta else _type_enum(enter))
    inputs = [_data(lv[1])[0] for lv in loop_vars]
    invariant = {n.name for n in invariants}
    captured: dict[str, int] = {}
    controls = []
    for n in [lv[1] for lv in loop_vars]:
        controls.extend(c for c in _controls(n) if c not in controls)
    var_of = {lv[0].name: i for i, lv in enumerate(loop_vars)}
    body_var = {lv[3].name: i for i, lv in enumerate(loop_vars)}

    def capture(ref: str, enter=None):
        """The arg standing for ``ref``, read from outside the loop (an invariant ``Enter``
        passes its own input); only what the loop reads becomes an input."""
        if ref.startswith("^"):
            c = "^" + _src(ref)
            if c not in controls:
                controls.append(c)
            return None
        ref = _canon(ref)
        if ref not in captured:
            captured[ref] = len(arg_names)
            arg_names.append(f"{tag}/arg/{len(arg_names)}")
            if _is_tensor_array(ref, by_name):
                types.append(_DT_VARIANT)
            elif enter is not None:
                types.append(_type_enum(enter))
            else:
                types.append(_out_type(by_name.get(_src(ref))))
            inputs.append(ref)
            if enter is not None:
                controls.extend(c for c in _controls(enter) if c not in controls)
        return f"{arg_names[captured[ref]]}:0"

    def rewriter(in_body: bool):
        def rewrite(ref: str):
            s = _src(ref)
            if s not in members:
                return capture(ref)
            n = members[s]
            if s not in structure:
                return ref
            if ref.startswith("^"):
                return None  # ordering against the loop's own structure: args are ready
            if n.op == "Merge" and _index(ref) == 0:
                return f"{arg_names[var_of[s]]}:0"
            if s in invariant:
                return capture(_data(n)[0], enter=n)
            if in_body and n.op == "Switch" and _index(ref) == 1:
                return f"{arg_names[body_var[s]]}:0"
            raise _UnsupportedError(
                f"node reads {ref!r} of loop frame {frame!r} in a way a While cannot express"
            )

        return rewrite

    structure = {loop_cond.name} | {e.name for e in invariants}
    for lv in loop_vars:
        structure.update(x.name for x in lv)
    cond_nodes = _collect(_data(loop_cond)[:1], members, structure, rewriter(False))
    cond_out = _canon(rewriter(False)(_data(loop_cond)[0]))
    body_roots = [_data(lv[2])[0] for lv in loop_vars]
    body_nodes = _collect(body_roots, members, structure, rewriter(True))
    body_outs = [_canon(rewriter(True)(r)) for r in body_roots]
    # nodes of the frame nothing above reads (side effects each iteration): control outputs
    used = {n.name for n in cond_nodes} | {n.name for n in body_nodes}
    read = {_src(r) for n in members.values() for r in n.inputs}
    sinks = [
        name
        for name, n in members.items()
        if name not in structure and name not in used and name not in read
    ]
    extra = _collect(sinks, members, structure, rewriter(True))
    known = {n.name for n in body_nodes}
    body_nodes += [n for n in extra if n.name not in known]
    # captures found while walking come after the loop variables and invariants
    args = [_arg(a, t, i) for i, (a, t) in enumerate(zip(arg_names, types))]
    cond_nodes = _without_args(_conds(args + cond_nodes))
    body_nodes = _without_args(_conds(args + body_nodes))
    invariant_outs = [f"{a}:0" for a in arg_names[n_vars:]]
    cond_fn = FunctionBody(tag + "/cond", args, cond_nodes, [cond_out], [])
    body_fn = FunctionBody(tag + "/body", args, body_nodes, body_outs + invariant_outs, sinks)
    pi = loop_vars[0][1].attrs.get("parallel_iterations") if loop_vars else None
    attrs = {
        "cond": cond_fn,
        "body": body_fn,
        "parallel_iterations": pi or attr_value_pb2.AttrValue(i=10),
    }
    while_node = _node(tag, "While", inputs + controls, attrs)
    outs = [
        _node(e.name, "Identity", [f"{tag}:{exit_index[e.name]}"] + _controls(e), _t(e))
        for e in exits
    ]
    return while_node, outs


_BOOL_OUT = frozenset(
    [
        "Less",
        "LessEqual",
        "Greater",
        "GreaterEqual",
        "Equal",
        "NotEqual",
        "LogicalAnd",
        "LogicalOr",
        "LogicalNot",
        "IsFinite",
        "IsNan",
        "IsInf",
        "LoopCond",
    ]
)


def _out_type(node) -> int:
    """TF's type enum of a captured value, from its node's attrs."""
    if node is None:
        raise _UnsupportedError("a loop or cond reads a value from a node the graph lacks")
    if node.op == _ARG:
        return int(node.attrs["type"])
    if node.op in _BOOL_OUT:
        return 10  # DT_BOOL
    for key in ("T", "dtype", "out_type", "DstT"):
        av = node.attrs.get(key)
        if av is not None and av.WhichOneof("value") == "type" and av.type < 100:
            return int(av.type)
    raise _UnsupportedError(
        f"cannot tell the dtype of {node.name!r} ({node.op}) read by control flow"
    )


def _loops(nodes: list, where: str) -> list:
    by_name = {n.name: n for n in nodes}
    frame, parent = _assign_frames(by_name)
    frames = sorted(parent, key=lambda f: -_depth(f, parent))
    names = _Names(by_name)
    for f in frames:
        members = {k: by_name[k] for k, v in frame.items() if v == f and k in by_name}
        exits = [
            n
            for n in by_name.values()
            if _base(n.op) == "Exit" and _data(n) and frame.get(_src(_data(n)[0])) == f
        ]
        try:
            if any(n.op.startswith("Ref") for n in members.values()):
                raise _UnsupportedError("the loop passes reference variables (Ref* ops)")
            while_node, outs = _loop(f, members, exits, by_name, names)
        except _UnsupportedError as e:
            why = attr_value_pb2.AttrValue(s=f"{e}".encode())
            for n in list(members.values()) + exits:
                if n.op in V1_CONTROL_OPS:
                    by_name[n.name] = _node(n.name, n.op, n.inputs, {**n.attrs, WHY_ATTR: why})
            continue
        for k in list(members) + [e.name for e in exits]:
            del by_name[k]
            frame.pop(k, None)
        # nothing outside may read inside the loop but through an Exit
        for name, n in list(by_name.items()):
            bad = [r for r in n.inputs if _src(r) in members]
            if bad:
                if any(not r.startswith("^") for r in bad):
                    raise TFFormatError(
                        f"{where}: node {name!r} reads {bad[0]!r} from inside loop {f!r} "
                        "without an Exit"
                    )
                fixed = [r for r in n.inputs if _src(r) not in members]
                fixed.append("^" + while_node.name)
                by_name[name] = _node(name, n.op, fixed, n.attrs)
        by_name[while_node.name] = while_node
        frame[while_node.name] = parent[f]
        for o in outs:
            by_name[o.name] = o
            frame[o.name] = parent[f]
    return list(by_name.values())


# -----------------------------------------------------------------------------------------
# 3. Conds
# -----------------------------------------------------------------------------------------


def _pred_key(ref: str, by_name: dict) -> str:
    """The predicate a Switch tests, through the ``Identity`` nodes TF puts before it."""
    ref = _canon(ref)
    for _ in range(_MAX_TRACE):
        n = by_name.get(_src(ref))
        if n is None or n.op != "Identity" or not _data(n):
            return ref
        ref = _canon(_data(n)[0])
    return ref


def _conditions(by_name: dict) -> dict:
    """Each node's branch condition: frozenset of (predicate, branch)."""
    cond: dict[str, frozenset] = {}
    for name in _topological(by_name, skip_back_edges=False):
        n = by_name[name]
        if n.op == "Merge":
            lits = [_literals(r, by_name, cond) for r in _data(n)]
            split = _merge_split(lits)
            c = split[0] if split is not None else frozenset().union(*lits)
            for r in _controls(n):
                c |= cond.get(_src(r), frozenset())
            cond[name] = c
            continue
        c = frozenset()
        for r in n.inputs:
            c |= _literals(r, by_name, cond)
        cond[name] = c
    return cond


def _literals(ref: str, by_name: dict, cond: dict) -> frozenset:
    s = _src(ref)
    c = cond.get(s, frozenset())
    n = by_name.get(s)
    if n is not None and n.op == "Switch" and not ref.startswith("^"):
        data = _data(n)
        c = c | {(_pred_key(data[1], by_name), _index(ref))}
    return c


def _merge_split(lits: list) -> tuple | None:
    """(outer condition, predicate, {branch: input position}) when the inputs are the two
    branches of one cond; None otherwise."""
    if len(lits) != 2:
        return None
    a, b = lits
    only_a, only_b = a - b, b - a
    if len(only_a) != 1 or len(only_b) != 1:
        return None
    (pa, ba), (pb, bb) = next(iter(only_a)), next(iter(only_b))
    if pa != pb or {ba, bb} != {0, 1}:
        return None
    return a & b, pa, {ba: 0, bb: 1}


def _conds(nodes: list) -> list:
    if not any(n.op in ("Switch", "Merge") for n in nodes):
        return nodes
    if any(n.op in ("Enter", "Exit", "NextIteration", "LoopCond") for n in nodes):
        return nodes  # a loop stayed (its reason is attached); its conds stay with it
    by_name = {n.name: n for n in nodes}
    names = _Names(by_name)
    cond = _conditions(by_name)
    groups: dict[tuple, list] = collections.defaultdict(list)
    value_index_read = {
        _src(r)
        for n in nodes
        for r in _data(n)
        if _index(r) == 1 and by_name.get(_src(r)) is not None and by_name[_src(r)].op == "Merge"
    }
    for n in nodes:
        if n.op != "Merge":
            continue
        if n.name in value_index_read:
            by_name[n.name] = _mark(n, "its value_index output (which branch ran) is read")
            continue
        split = _merge_split([_literals(r, by_name, cond) for r in _data(n)])
        if split is None:
            by_name[n.name] = _mark(n, "its inputs are not the two branches of one cond")
            continue
        outer, pred, _ = split
        groups[(outer, pred)].append(n.name)
    for (outer, pred), merge_names in sorted(groups.items(), key=lambda kv: -len(kv[0][0])):
        try:
            _if(outer, pred, merge_names, by_name, cond, names)
        except _UnsupportedError as e:
            for m in merge_names:
                if m in by_name:
                    by_name[m] = _mark(by_name[m], str(e))
    return list(by_name.values())


def _mark(n, why: str):
    why_attr = attr_value_pb2.AttrValue(s=why.encode())
    return _node(n.name, n.op, n.inputs, {**n.attrs, WHY_ATTR: why_attr})


def _branch(ref, pred, branch, target, by_name, cond):
    """(branch nodes, entry refs) under ``ref``: nodes whose condition is ``target``."""
    nodes: dict[str, object] = {}
    entries = []
    stack = [ref]
    while stack:
        r = stack.pop()
        s = _src(r)
        n = by_name.get(s)
        if n is None or s in nodes:
            continue
        if n.op == "Switch" and not r.startswith("^"):
            data = _data(n)
            if _pred_key(data[1], by_name) == pred and _index(r) == branch:
                entries.append(r)
                continue
        c = cond[s]
        if c == target:
            nodes[s] = n
            stack.extend(n.inputs)
        elif (pred, branch) in c:
            raise _UnsupportedError(f"node {s!r} sits under a cond that could not be converted")
        # else: computed outside the cond, read directly: captured
    return nodes


def _if(outer, pred, merge_names, by_name, cond, names) -> None:
    """Replaces the conds joined at ``merge_names`` (same predicate and outer condition) by
    If nodes, one per group of merges whose branches share nodes."""
    from engine.formats.tensorflow.graph_def import FunctionBody

    pieces = []  # (merge, {branch: input ref}, {branch: nodes})
    for m in merge_names:
        n = by_name[m]
        data = _data(n)
        split = _merge_split([_literals(r, by_name, cond) for r in data])
        if split is None:
            raise _UnsupportedError(f"Merge {m!r} does not join the two branches of one cond")
        _, _, pos = split
        refs = {b: data[pos[b]] for b in (0, 1)}
        sets = {b: _branch(refs[b], pred, b, outer | {(pred, b)}, by_name, cond) for b in (0, 1)}
        pieces.append((n, refs, sets))
    # nodes under a branch that no output reads (a nested cond's predicate identity, side
    # effects) go with the first cond: they run when that branch runs
    for b in (0, 1):
        target = outer | {(pred, b)}
        taken = set().union(*(sets[b] for _, _, sets in pieces))
        for name, n in by_name.items():
            if name not in taken and cond.get(name) == target:
                pieces[0][2][b][name] = n
    # group merges whose branches share a node
    parent = list(range(len(pieces)))

    def find(i):
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    owner = {}
    for i, (_, _, sets) in enumerate(pieces):
        for b in (0, 1):
            for s in sets[b]:
                if s in owner:
                    parent[find(i)] = find(owner[s])
                owner[s] = i
    clusters = collections.defaultdict(list)
    for i in range(len(pieces)):
        clusters[find(i)].append(pieces[i])
    for cluster in clusters.values():
        _one_if(outer, pred, cluster, by_name, cond, names, FunctionBody)


def _one_if(outer, pred, cluster, by_name, cond, names, function_body) -> None:
    first = cluster[0][0].name
    tag = names.fresh(first.rsplit("/", 1)[0] + "/functional_if" if "/" in first else "cond")
    members = {b: {} for b in (0, 1)}
    for _, _, sets in cluster:
        for b in (0, 1):
            members[b].update(sets[b])
    inside = set(members[0]) | set(members[1])
    captures: dict[str, int] = {}
    types: list[int] = []
    controls: list[str] = []
    arg_names: list[str] = []

    def capture(value_ref: str, type_node) -> str:
        value_ref = _canon(value_ref)
        if value_ref not in captures:
            captures[value_ref] = len(arg_names)
            arg_names.append(f"{tag}/arg/{len(arg_names)}")
            ta = _is_tensor_array(value_ref, by_name)
            types.append(_DT_VARIANT if ta else _out_type(type_node))
        return f"{arg_names[captures[value_ref]]}:0"

    def rewrite(ref: str, branch: int):
        s = _src(ref)
        if s in members[branch]:
            return ref
        n = by_name[s]
        if ref.startswith("^"):
            if n.op != "Switch" and cond[s] <= outer and s not in inside:
                c = "^" + s
                if c not in controls:
                    controls.append(c)
            return None
        if n.op == "Switch" and _pred_key(_data(n)[1], by_name) == pred:
            return capture(_data(n)[0], n)
        if s in inside:
            raise _UnsupportedError(f"a branch reads {ref!r} from the other branch")
        return capture(ref, n)

    bodies = {}
    for b in (0, 1):
        fn_nodes = [
            _node(k, n.op, [x for x in (rewrite(r, b) for r in n.inputs) if x is not None], n.attrs)
            for k, n in members[b].items()
        ]
        outs = [_canon(rewrite(refs[b], b)) for _, refs, _ in cluster]
        bodies[b] = (fn_nodes, outs)
    args = [_arg(a, t, i) for i, (a, t) in enumerate(zip(arg_names, types))]
    fns = {}
    for b in (0, 1):
        fn_nodes, outs = bodies[b]
        fn_nodes = _without_args(_conds(args + fn_nodes))
        fns[b] = function_body(f"{tag}/{'then' if b else 'else'}", args, fn_nodes, outs, [])
    # the If reads the predicate itself (TF's Switch reads it through an Identity)
    if_node = _node(
        tag,
        "If",
        [pred] + list(captures) + controls,
        {"then_branch": fns[1], "else_branch": fns[0]},
    )
    removed = set(inside)
    by_name[tag] = if_node
    cond[tag] = outer
    for j, (m, _, _) in enumerate(cluster):
        by_name[m.name] = _node(m.name, "Identity", [f"{tag}:{j}"] + _controls(m), _t(m))
        cond[m.name] = outer
    for k in removed:
        del by_name[k]
    # Switches no one reads any more go; readers of removed nodes are re-pointed
    read = collections.Counter(_src(r) for n in by_name.values() for r in n.inputs)
    for name, n in list(by_name.items()):
        if n.op == "Switch" and read[name] == 0 and _pred_key(_data(n)[1], by_name) == pred:
            del by_name[name]
    for name, n in list(by_name.items()):
        bad = [r for r in n.inputs if _src(r) in removed]
        if not bad:
            continue
        if any(not r.startswith("^") for r in bad):
            raise TFFormatError(
                f"node {name!r} reads {bad[0]!r} from inside a cond branch without a Merge"
            )
        fixed = [r for r in n.inputs if _src(r) not in removed] + ["^" + tag]
        by_name[name] = _node(name, n.op, list(dict.fromkeys(fixed)), n.attrs)


# -----------------------------------------------------------------------------------------


def functionalize(nodes: list, where: str = "graph") -> list:
    """``nodes`` with TF1 control flow as If/While nodes whose branch and loop functions are
    ``graph_def.FunctionBody`` values (as TF2's If/While are after inlining)."""
    nodes = tensor_arrays(nodes)
    if not any(n.op in V1_CONTROL_OPS for n in nodes):
        return nodes
    nodes = _loops(nodes, where)
    return _conds(nodes)
