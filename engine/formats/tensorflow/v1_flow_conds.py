"""TF1 conds (``Switch``/``Merge``) as functional ``If`` nodes (see ``functionalize.py``).

Every node gets its branch condition: the set of (predicate, branch) pairs of the ``Switch``
outputs it depends on. A ``Merge`` joins two inputs whose conditions differ in one
predicate's branch; the nodes whose condition is exactly the outer condition plus that
branch form the branch's function. Innermost conds go first, so an outer branch holds the
inner cond as one ``If`` node."""

from __future__ import annotations

import collections

from engine.formats.tensorflow.nodes import (
    FunctionBody,
    Node,
    canonical,
    control_inputs,
    data_inputs,
    output_index,
    source,
)
from engine.formats.tensorflow.tensors import TFFormatError
from engine.formats.tensorflow.v1_flow_common import (
    DT_VARIANT,
    Names,
    UnsupportedError,
    arg_node,
    identity_attrs,
    is_tensor_array,
    mark,
    out_type,
    topological,
    without_args,
)

__all__ = ["functionalize_conds"]

_MAX_TRACE = 256


def _pred_key(ref: str, by_name: dict) -> str:
    """The predicate a Switch tests, through the ``Identity`` nodes TF puts before it."""
    ref = canonical(ref)
    for _ in range(_MAX_TRACE):
        n = by_name.get(source(ref))
        if n is None or n.op != "Identity" or not data_inputs(n):
            return ref
        ref = canonical(data_inputs(n)[0])
    return ref


def _conditions(by_name: dict) -> dict:
    """Each node's branch condition: frozenset of (predicate, branch)."""
    cond: dict[str, frozenset] = {}
    for name in topological(by_name, skip_back_edges=False):
        n = by_name[name]
        if n.op == "Merge":
            lits = [_literals(r, by_name, cond) for r in data_inputs(n)]
            split = _merge_split(lits)
            c = split[0] if split is not None else frozenset().union(*lits)
            for r in control_inputs(n):
                c |= cond.get(source(r), frozenset())
            cond[name] = c
            continue
        c = frozenset()
        for r in n.inputs:
            c |= _literals(r, by_name, cond)
        cond[name] = c
    return cond


def _literals(ref: str, by_name: dict, cond: dict) -> frozenset:
    s = source(ref)
    c = cond.get(s, frozenset())
    n = by_name.get(s)
    if n is not None and n.op == "Switch" and not ref.startswith("^"):
        c = c | {(_pred_key(data_inputs(n)[1], by_name), output_index(ref))}
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


def functionalize_conds(nodes: list) -> list:
    """``nodes`` (one graph or function level, loops already functional) with every cond
    as an ``If``; a cond that cannot be converted keeps its nodes, marked with the reason."""
    if not any(n.op in ("Switch", "Merge") for n in nodes):
        return nodes
    if any(n.op in ("Enter", "Exit", "NextIteration", "LoopCond") for n in nodes):
        return nodes  # a loop stayed (its reason is attached); its conds stay with it
    by_name = {n.name: n for n in nodes}
    names = Names(by_name)
    cond = _conditions(by_name)
    groups: dict[tuple, list] = collections.defaultdict(list)
    value_index_read = {
        source(r)
        for n in nodes
        for r in data_inputs(n)
        if output_index(r) == 1 and getattr(by_name.get(source(r)), "op", None) == "Merge"
    }
    for n in nodes:
        if n.op != "Merge":
            continue
        if n.name in value_index_read:
            by_name[n.name] = mark(n, "its value_index output (which branch ran) is read")
            continue
        split = _merge_split([_literals(r, by_name, cond) for r in data_inputs(n)])
        if split is None:
            by_name[n.name] = mark(n, "its inputs are not the two branches of one cond")
            continue
        outer, pred, _ = split
        groups[(outer, pred)].append(n.name)
    for (outer, pred), merge_names in sorted(groups.items(), key=lambda kv: -len(kv[0][0])):
        try:
            _if(_Cond(outer, pred, by_name, cond, names), merge_names)
        except UnsupportedError as e:
            for m in merge_names:
                if m in by_name:
                    by_name[m] = mark(by_name[m], str(e))
    return list(by_name.values())


class _Cond:
    """One predicate under one outer condition, over the level's mutable node map."""

    def __init__(self, outer, pred, by_name, cond, names):
        self.outer, self.pred = outer, pred
        self.by_name, self.cond, self.names = by_name, cond, names

    def is_entry(self, ref: str, branch: int | None = None) -> bool:
        """Whether ``ref`` is a Switch output on this predicate (of ``branch``)."""
        n = self.by_name.get(source(ref))
        if n is None or n.op != "Switch" or ref.startswith("^"):
            return False
        if _pred_key(data_inputs(n)[1], self.by_name) != self.pred:
            return False
        return branch is None or output_index(ref) == branch

    def branch(self, ref: str, branch: int) -> dict:
        """The nodes under ``ref`` whose condition is this cond's ``branch``."""
        target = self.outer | {(self.pred, branch)}
        nodes: dict[str, Node] = {}
        stack = [ref]
        while stack:
            r = stack.pop()
            s = source(r)
            n = self.by_name.get(s)
            if n is None or s in nodes or self.is_entry(r, branch):
                continue
            c = self.cond[s]
            if c == target:
                nodes[s] = n
                stack.extend(n.inputs)
            elif (self.pred, branch) in c:
                raise UnsupportedError(f"node {s!r} sits under a cond that could not be converted")
            # else: computed outside the cond and read directly: captured
        return nodes


def _if(c: _Cond, merge_names: list) -> None:
    """Replaces the conds joined at ``merge_names`` by If nodes, one per group of merges
    whose branches share nodes (one ``tf.cond`` with several outputs)."""
    pieces = []  # (merge, {branch: input ref}, {branch: nodes})
    for m in merge_names:
        n = c.by_name[m]
        data = data_inputs(n)
        split = _merge_split([_literals(r, c.by_name, c.cond) for r in data])
        if split is None:
            raise UnsupportedError(f"Merge {m!r} does not join the two branches of one cond")
        refs = {b: data[split[2][b]] for b in (0, 1)}
        pieces.append((n, refs, {b: c.branch(refs[b], b) for b in (0, 1)}))
    # nodes under a branch that no output reads (a nested cond's predicate identity, side
    # effects) go with the first cond: they run when that branch runs
    for b in (0, 1):
        target = c.outer | {(c.pred, b)}
        taken = set().union(*(sets[b] for _, _, sets in pieces))
        for name, n in c.by_name.items():
            if name not in taken and c.cond.get(name) == target:
                pieces[0][2][b][name] = n
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
        _one_if(c, cluster)


class _Captures:
    """The If's inputs after the predicate: values entering through a Switch on the
    predicate or read directly from outside; each is one arg of both branch functions."""

    def __init__(self, c: _Cond, tag: str, inside: set):
        self.c, self.tag, self.inside = c, tag, inside
        self.index: dict[str, int] = {}
        self.types: list[int] = []
        self.controls: list[str] = []

    def arg(self, value_ref: str, type_node: Node) -> str:
        value_ref = canonical(value_ref)
        if value_ref not in self.index:
            self.index[value_ref] = len(self.types)
            ta = is_tensor_array(value_ref, self.c.by_name)
            self.types.append(DT_VARIANT if ta else out_type(type_node))
        return f"{self.tag}/arg/{self.index[value_ref]}:0"

    def rewrite(self, ref: str, members: dict):
        s = source(ref)
        if s in members:
            return ref
        n = self.c.by_name[s]
        if ref.startswith("^"):
            if n.op != "Switch" and self.c.cond[s] <= self.c.outer and s not in self.inside:
                if "^" + s not in self.controls:
                    self.controls.append("^" + s)  # ordering on outside work: the If's
            return None
        if self.c.is_entry(ref):
            return self.arg(data_inputs(n)[0], n)
        if s in self.inside:
            raise UnsupportedError(f"a branch reads {ref!r} from the other branch")
        return self.arg(ref, n)

    def args(self) -> list[Node]:
        return [arg_node(f"{self.tag}/arg/{i}", t, i) for i, t in enumerate(self.types)]


def _one_if(c: _Cond, cluster: list) -> None:
    first = cluster[0][0].name
    tag = c.names.fresh(first.rsplit("/", 1)[0] + "/functional_if" if "/" in first else "cond")
    members = {b: {} for b in (0, 1)}
    for _, _, sets in cluster:
        for b in (0, 1):
            members[b].update(sets[b])
    inside = set(members[0]) | set(members[1])
    caps = _Captures(c, tag, inside)
    bodies = {}
    for b in (0, 1):
        fn_nodes = []
        for k, n in members[b].items():
            inputs = [caps.rewrite(r, members[b]) for r in n.inputs]
            fn_nodes.append(Node(k, n.op, [x for x in inputs if x is not None], n.attrs))
        outs = [canonical(caps.rewrite(refs[b], members[b])) for _, refs, _ in cluster]
        bodies[b] = (fn_nodes, outs)
    args = caps.args()
    fns = {
        b: FunctionBody(
            f"{tag}/{'then' if b else 'else'}",
            args,
            without_args(functionalize_conds(args + bodies[b][0])),
            bodies[b][1],
            [],
        )
        for b in (0, 1)
    }
    # the If reads the predicate itself (TF's Switch reads it through an Identity)
    inputs = [c.pred] + list(caps.index) + caps.controls
    c.by_name[tag] = Node(tag, "If", inputs, {"then_branch": fns[1], "else_branch": fns[0]})
    c.cond[tag] = c.outer
    for j, (m, _, _) in enumerate(cluster):
        outs = [f"{tag}:{j}"] + control_inputs(m)
        c.by_name[m.name] = Node(m.name, "Identity", outs, identity_attrs(m))
        c.cond[m.name] = c.outer
    _remove(c, inside, tag)


def _remove(c: _Cond, removed: set, tag: str) -> None:
    """Drops a converted cond's branch nodes and the Switches no one reads any more; a
    control input on a removed node now waits for the If."""
    for k in removed:
        del c.by_name[k]
    read = collections.Counter(source(r) for n in c.by_name.values() for r in n.inputs)
    for name, n in list(c.by_name.items()):
        if n.op == "Switch" and read[name] == 0 and c.is_entry(f"{name}:0"):
            del c.by_name[name]
    for name, n in list(c.by_name.items()):
        bad = [r for r in n.inputs if source(r) in removed]
        if not bad:
            continue
        if any(not r.startswith("^") for r in bad):
            raise TFFormatError(
                f"node {name!r} reads {bad[0]!r} from inside a cond branch without a Merge"
            )
        fixed = [r for r in n.inputs if source(r) not in removed] + ["^" + tag]
        c.by_name[name] = Node(name, n.op, list(dict.fromkeys(fixed)), n.attrs)
