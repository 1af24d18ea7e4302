"""Op-table rows for ai.onnx.ml ``TreeEnsembleRegressor`` and ``TreeEnsembleClassifier``
(opsets 1 and 3; both are removed at ai.onnx.ml opset 5, in favour of ``TreeEnsemble``).

The ensemble is read once at import into flat per-node arrays over all trees (feature,
threshold, branch mode, true/false child, missing-value direction) and a compact leaf table
([leaves, targets] weights and has-a-weight flags). The graph then walks every tree for every
row at once: one step per depth level gathers the current nodes' features and thresholds for
the whole [rows, trees] index matrix and picks the next nodes (leaves point to themselves, so
rows that reach a leaf early stay there). No Python loop per row or per tree, and the number
of graph ops grows with the depth only.

Aggregation, base values, post transforms and the binary-classifier corners follow
onnxruntime's tree aggregators (``tree_ensemble_aggregator.h``).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from engine.formats.onnx import _tf as tf
from engine.formats.onnx.mapping import ML_DOMAIN, UnsupportedModelError, register
from engine.formats.onnx.mapping_ml import (
    bounded,
    class_labels,
    first_argmax,
    floats,
    ints,
    label_of,
    post_transform,
    probit,
    rows,
    second_column,
    transform_name,
    where,
)
from engine.formats.onnx.tensors import OnnxFormatError
from engine.framework.graph import Tensor, control_dependencies
from engine.ops.logging_ops import Assert
from engine.ops.reduction import reduce_any

__all__ = ["MAX_TREE_DEPTH", "MAX_TREE_NODES"]

MAX_TREE_NODES = 1 << 22
MAX_TREE_DEPTH = 512  # graph ops grow with depth; deeper trees are refused at import
MAX_TARGETS = 1 << 16
MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "LEAF")
LEAF = MODES.index("LEAF")
AGGREGATES = ("SUM", "AVERAGE", "MIN", "MAX")


@dataclass
class Forest:
    """An ensemble as flat arrays over all its nodes (file order)."""

    feature: np.ndarray  # int64 [nodes]
    threshold: np.ndarray  # float32 (float64 for a float64 input) [nodes]
    mode: np.ndarray  # int8 [nodes], index into MODES
    true_child: np.ndarray  # int64 [nodes], itself for leaves
    false_child: np.ndarray  # int64 [nodes]
    missing_true: np.ndarray  # bool [nodes]
    roots: np.ndarray  # int64 [trees]
    depth: int
    slot: np.ndarray  # int64 [nodes]: row of the leaf tables, 0 = no weights
    weights: np.ndarray  # float32 [slots, targets]
    has_weight: np.ndarray  # bool [slots, targets]


def _node_arrays(ctx, node):
    tree_ids = ints(ctx, node, "nodes_treeids", [])
    node_ids = ints(ctx, node, "nodes_nodeids", [])
    count = bounded(len(tree_ids), node, "the number of tree nodes", MAX_TREE_NODES)
    if not count:
        raise OnnxFormatError(f"{where(node)} has no tree nodes")
    modes = ctx.attr(node, "nodes_modes", [])
    try:
        mode = np.array([MODES.index(m) for m in modes], dtype=np.int8)
    except ValueError:
        bad = sorted(set(modes) - set(MODES))
        raise UnsupportedModelError(f"{where(node)}: node modes {bad}, expected {MODES}") from None
    arrays = {
        "node_ids": node_ids,
        "feature": ints(ctx, node, "nodes_featureids", []),
        "threshold": floats(ctx, node, "nodes_values", []),
        "true_ids": ints(ctx, node, "nodes_truenodeids", []),
        "false_ids": ints(ctx, node, "nodes_falsenodeids", []),
        "mode": mode,
    }
    for name, array in arrays.items():
        if len(array) != count:
            raise OnnxFormatError(f"{where(node)}: {len(array)} {name} for {count} tree nodes")
    missing = ints(ctx, node, "nodes_missing_value_tracks_true", None)
    if missing is None or not missing.size:
        missing = np.zeros(count, np.int64)
    if len(missing) != count:
        raise OnnxFormatError(f"{where(node)}: {len(missing)} missing-value flags, {count} nodes")
    arrays["missing_true"] = missing.astype(bool)
    return tree_ids, arrays


def _positions(tree_ids, node_ids, node) -> dict:
    positions = {}
    for i, key in enumerate(zip(tree_ids.tolist(), node_ids.tolist())):
        if positions.setdefault(key, i) != i:
            raise OnnxFormatError(f"{where(node)}: tree {key[0]} node {key[1]} appears twice")
    return positions


def _children(tree_ids, arrays, positions, node):
    is_leaf = arrays["mode"] == LEAF
    out = []
    for name in ("true_ids", "false_ids"):
        child = np.arange(len(tree_ids), dtype=np.int64)
        for i in np.flatnonzero(~is_leaf).tolist():
            key = (int(tree_ids[i]), int(arrays[name][i]))
            if key not in positions:
                raise OnnxFormatError(f"{where(node)}: tree {key[0]} has no node {key[1]}")
            child[i] = positions[key]
        out.append(child)
    return out


def _depth(roots, true_child, false_child, is_leaf, node) -> int:
    """Levels to walk from the roots to the deepest leaf (a cycle never ends: refused)."""
    frontier, depth = roots, 0
    while True:
        branch = frontier[~is_leaf[frontier]]
        if not branch.size:
            return depth
        depth += 1
        if depth > MAX_TREE_DEPTH:
            raise UnsupportedModelError(
                f"{where(node)}: trees deeper than {MAX_TREE_DEPTH} levels (or a cycle)"
            )
        frontier = np.unique(np.concatenate([true_child[branch], false_child[branch]]))


def _leaf_tables(ctx, node, prefix, positions, count, targets, aggregate):
    tree_ids = ints(ctx, node, f"{prefix}_treeids", [])
    node_ids = ints(ctx, node, f"{prefix}_nodeids", [])
    ids = ints(ctx, node, f"{prefix}_ids", [])
    values = floats(ctx, node, f"{prefix}_weights", [])
    if not (len(tree_ids) == len(node_ids) == len(ids) == len(values)):
        raise OnnxFormatError(f"{where(node)}: {prefix}_* attributes differ in length")
    if len(ids) and (ids.min() < 0 or ids.max() >= targets):
        raise OnnxFormatError(f"{where(node)}: {prefix}_ids outside [0, {targets})")
    at = np.empty(len(ids), np.int64)
    for i, key in enumerate(zip(tree_ids.tolist(), node_ids.tolist())):
        if key not in positions:
            raise OnnxFormatError(f"{where(node)}: weight for missing tree {key[0]} node {key[1]}")
        at[i] = positions[key]
    if targets == 1:  # onnxruntime's one-target leaves keep their first weight only
        keep = np.sort(np.unique(at, return_index=True)[1])
        at, ids, values = at[keep], ids[keep], values[keep]
    leaves, rows_of = np.unique(at, return_inverse=True)
    bounded((len(leaves) + 1) * targets, node, "leaves x targets")
    slot = np.zeros(count, np.int64)
    slot[leaves] = np.arange(1, len(leaves) + 1)
    start = {"MIN": np.inf, "MAX": -np.inf}.get(aggregate, 0.0)
    weights = np.full((len(leaves) + 1, targets), start, np.float32)
    has = np.zeros(weights.shape, bool)
    combine = {"MIN": np.minimum, "MAX": np.maximum}.get(aggregate, np.add)
    combine.at(weights, (rows_of + 1, ids), values)
    has[rows_of + 1, ids] = True
    weights[~has] = 0.0
    return slot, weights, has, ids, values


def read_forest(ctx, node, prefix: str, targets: int, aggregate: str, double: bool):
    """A TreeEnsemble node's attributes as a :class:`Forest` (checked and bounded)."""
    tree_ids, arrays = _node_arrays(ctx, node)
    count = len(tree_ids)
    positions = _positions(tree_ids, arrays["node_ids"], node)
    true_child, false_child = _children(tree_ids, arrays, positions, node)
    starts = np.flatnonzero(np.concatenate([[True], tree_ids[1:] != tree_ids[:-1]]))
    depth = _depth(starts, true_child, false_child, arrays["mode"] == LEAF, node)
    if arrays["feature"].min() < 0:
        raise OnnxFormatError(f"{where(node)}: negative feature ids")
    slot, weights, has, ids, values = _leaf_tables(
        ctx, node, prefix, positions, count, targets, aggregate
    )
    values_tensor = ctx.attr(node, "nodes_values_as_tensor", None)
    threshold = arrays["threshold"]
    if double and values_tensor is not None:
        threshold = np.asarray(values_tensor, np.float64).reshape(-1)
    forest = Forest(
        feature=arrays["feature"],
        threshold=threshold.astype(np.float64 if double else np.float32),
        mode=arrays["mode"],
        true_child=true_child,
        false_child=false_child,
        missing_true=arrays["missing_true"],
        roots=starts.astype(np.int64),
        depth=depth,
        slot=slot,
        weights=weights,
        has_weight=has,
    )
    return forest, ids, values


def _branch(value: Tensor, threshold: Tensor, mode) -> Tensor:
    compare = (
        tf.less_equal,
        tf.less,
        tf.greater_equal,
        tf.greater,
        tf.equal,
        tf.not_equal,
    )
    if isinstance(mode, int):
        return compare[mode](value, threshold)
    out = compare[0](value, threshold)
    for code in range(1, LEAF):
        out = tf.where_v2(
            tf.equal(mode, tf.constant(np.int8(code))), compare[code](value, threshold), out
        )
    return out


def walk(forest: Forest, x: Tensor) -> Tensor:
    """The leaf each row reaches in each tree: int64 [rows, trees]."""
    count = tf.shape(x, out_type=tf.int64)
    width = count[1]
    # As onnxruntime: a feature id past the input's width fails the run (else a row would
    # silently read the next row's values).
    top = int(forest.feature.max())
    message = f"a tree path requests feature {top} but the input tensor has"
    check = Assert(tf.less(tf.constant(np.int64(top)), width), [message, width, "features"])
    with control_dependencies([check]):
        flat = tf.reshape(x, tf.constant(np.array([-1], np.int64)))
    row_start = tf.expand_dims(tf.multiply(tf.range(count[0]), width), 1)
    at = tf.add(tf.multiply(row_start, tf.constant(np.int64(0))), tf.constant(forest.roots))
    branch_modes = np.unique(forest.mode[forest.mode != LEAF])
    mode = int(branch_modes[0]) if len(branch_modes) == 1 else tf.constant(forest.mode)
    feature, threshold = tf.constant(forest.feature), tf.constant(forest.threshold)
    true_child, false_child = tf.constant(forest.true_child), tf.constant(forest.false_child)
    missing = tf.constant(forest.missing_true) if forest.missing_true.any() else None
    for _level in range(forest.depth):
        value = tf.gather(flat, tf.add(row_start, tf.gather(feature, at)))
        node_mode = mode if isinstance(mode, int) else tf.gather(mode, at)
        go_true = _branch(value, tf.gather(threshold, at), node_mode)
        if missing is not None:
            go_true = tf.logical_or(
                go_true, tf.logical_and(tf.is_nan(value), tf.gather(missing, at))
            )
        at = tf.where_v2(go_true, tf.gather(true_child, at), tf.gather(false_child, at))
    return at


def aggregate_leaves(forest: Forest, leaves: Tensor, aggregate: str) -> tuple[Tensor, Tensor]:
    """Per row and target: the trees' combined leaf weights and whether any tree gave one."""
    slot = tf.gather(tf.constant(forest.slot), leaves)
    values = tf.gather(tf.constant(forest.weights), slot)
    has = tf.gather(tf.constant(forest.has_weight), slot)
    any_has = reduce_any(has, axis=1)
    if aggregate in ("SUM", "AVERAGE"):
        return tf.reduce_sum(values, axis=1), any_has
    far = np.float32(np.inf if aggregate == "MIN" else -np.inf)
    masked = tf.where_v2(has, values, tf.constant(far))
    reduced = (tf.reduce_min if aggregate == "MIN" else tf.reduce_max)(masked, axis=1)
    return tf.where_v2(any_has, reduced, tf.constant(np.float32(0.0))), any_has


def _input(ctx, node):
    x = ctx.input(node, 0)
    double = x.dtype.base_dtype.name == "float64"
    return (x if double else rows(ctx, node, x)), double


def _check_base(node, base: np.ndarray, allowed: tuple[int, ...]) -> None:
    if len(base) not in allowed:  # onnxruntime refuses these sessions too
        raise OnnxFormatError(
            f"{where(node)}: {len(base)} base_values, expected {' or '.join(map(str, allowed))}"
        )


def _regressor(ctx, node):
    targets = bounded(int(ctx.attr(node, "n_targets", 1)), node, "n_targets", MAX_TARGETS)
    aggregate = ctx.attr(node, "aggregate_function", "SUM")
    if aggregate not in AGGREGATES:
        raise UnsupportedModelError(f"{where(node)}: aggregate_function {aggregate!r}")
    transform = transform_name(ctx, node)
    x, double = _input(ctx, node)
    forest, _, _ = read_forest(ctx, node, "target", targets, aggregate, double)
    scores, _ = aggregate_leaves(forest, walk(forest, x), aggregate)
    base = floats(ctx, node, "base_values", [])
    _check_base(node, base, (0, targets))
    if aggregate == "AVERAGE":
        scores = tf.realdiv(scores, tf.constant(np.float32(len(forest.roots))))
    if targets == 1:
        # onnxruntime's single-target path: one base value at most, PROBIT the only transform.
        origin = np.float32(base[0] if len(base) == 1 else 0.0)
        scores = tf.add(scores, tf.constant(origin))
        return [probit(scores) if transform == "PROBIT" else scores]
    if len(base) == targets:
        scores = tf.add(scores, tf.constant(base))
    return [post_transform(scores, transform)]


def _binary_classifier(forest, scores, has, base, binary_case, positive, labels, transform):
    """onnxruntime's two-class rules (TreeAggregatorClassifier::FinalizeScores)."""
    s0, s1 = scores[:, 0:1], scores[:, 1:2]
    h0, h1 = has[:, 0:1], has[:, 1:2]
    zero = tf.constant(np.float32(0.0))
    two_columns = tf.logical_or(h1, tf.constant(len(base) == 2 or len(base) > 2))
    if len(base) == 2:
        plus = tf.add(s0, tf.constant(base[1:2]))
        s1 = tf.where_v2(h1, plus, tf.add(s1, tf.constant(base[1:2])))
        s0 = tf.where_v2(h1, tf.negative(plus), tf.add(s0, tf.constant(base[0:1])))
    elif len(base) == 1:
        s0 = tf.add(s0, tf.constant(base[0:1]))
    pos = tf.where_v2(h1, s1, tf.where_v2(h0, s0, zero))[:, 0]
    if binary_case:
        cut = 0.5 if positive else 0.0
        winner = tf.cast(tf.greater(pos, tf.constant(np.float32(cut))), tf.int64)
        label = label_of(winner, labels)
        one_column = second_column(s0, "complement" if positive else "mirror", transform)
    else:
        values = labels if labels.dtype == object else np.array([0, 1], np.int64)
        label = label_of(tf.cast(tf.greater(pos, zero), tf.int64), values)
        mode = "mirror" if not len(base) else None
        one_column = (
            second_column(s0, mode, transform)
            if mode
            else tf.concat([s0, tf.multiply(tf.ones_like(s0), zero)], 1)
        )
    if transform == "PROBIT" and not (len(base) >= 2):
        raise UnsupportedModelError("binary tree classifier with one score column and PROBIT")
    both = post_transform(tf.concat([s0, s1], 1), transform)
    return label, tf.where_v2(two_columns, both, one_column)


def _classifier(ctx, node):
    labels = class_labels(ctx, node, "classlabels_int64s", "classlabels_strings")
    if labels is None or labels.size < 2:
        raise UnsupportedModelError(f"{where(node)}: needs at least 2 class labels")
    classes = bounded(labels.size, node, "the number of classes", MAX_TARGETS)
    transform = transform_name(ctx, node)
    x, double = _input(ctx, node)
    forest, ids, values = read_forest(ctx, node, "class", classes, "SUM", double)
    scores, has = aggregate_leaves(forest, walk(forest, x), "SUM")
    base = floats(ctx, node, "base_values", [])
    _check_base(node, base, (0, 1, 2) if classes == 2 else (0, classes))
    if classes == 2:
        binary_case = len(np.unique(ids)) == 1
        positive = bool((values >= 0).all())
        return list(
            _binary_classifier(forest, scores, has, base, binary_case, positive, labels, transform)
        )
    if len(base):
        padded = np.zeros(classes, np.float32)
        padded[: min(len(base), classes)] = base[:classes]
        scores = tf.add(scores, tf.constant(padded))
        given = np.zeros(classes, bool)
        given[: len(base)] = True
        has = tf.logical_or(has, tf.constant(given))
    lowest = tf.constant(np.float32(-np.inf))
    winner = first_argmax(tf.where_v2(has, scores, lowest))
    return [label_of(winner, labels), post_transform(scores, transform)]


# ai.onnx.ml opset 5 removed both (None rows): such models are reported as unsupported.
register("TreeEnsembleRegressor", (1, 3, 5), {1: _regressor, 5: None}, domain=ML_DOMAIN)
register("TreeEnsembleClassifier", (1, 3, 5), {1: _classifier, 5: None}, domain=ML_DOMAIN)
