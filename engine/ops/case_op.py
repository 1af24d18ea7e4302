"""``tf.case``: the first of several branches whose predicate is true, as nested ``cond``s.

Built as TensorFlow 1.15 builds it: the predicates are tested in order (for a dict, in the
order of the predicates' tensor names), only the chosen branch runs, and without a
``default`` the last branch is the fallback, guarded by an ``Assert`` that fails the run when
no predicate is true. ``exclusive=True`` adds an ``Assert`` that at most one is true.
"""

from __future__ import annotations

import collections
import functools
import logging

from engine import dtypes
from engine.framework.constant_op import constant
from engine.framework.graph import Tensor, control_dependencies, name_scope
from engine.ops import array_transform, reduction
from engine.ops import math as math_ops
from engine.ops.control_flow import cond
from engine.ops.logging_ops import Assert

__all__ = ["case"]

log = logging.getLogger("tensorflow")


def _pairs(pred_fn_pairs, exclusive: bool) -> tuple[list, list]:
    """(predicates, functions) after TF's checks."""
    if isinstance(pred_fn_pairs, collections.OrderedDict):
        pairs = list(pred_fn_pairs.items())
    elif isinstance(pred_fn_pairs, dict):
        pairs = sorted(pred_fn_pairs.items(), key=lambda item: item[0].name)
        if not exclusive:
            log.warning(
                "case: an unordered dictionary of predicate/fn pairs was given with "
                "exclusive=False; the predicates are tested in the order of their names"
            )
    elif isinstance(pred_fn_pairs, (list, tuple)):
        pairs = list(pred_fn_pairs)
    else:
        raise TypeError("fns must be a list, tuple, or dict")
    for pair in pairs:
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError("Each entry in pred_fn_pairs must be a 2-tuple")
        pred, fn = pair
        if not isinstance(pred, Tensor):
            raise TypeError(f"pred must be Tensor, bool, or Python bool; got {pred!r}")
        if pred.dtype.base_dtype != dtypes.bool:
            raise TypeError(f"pred must be Tensor of type bool: {pred.name}")
        if not callable(fn):
            raise TypeError(f"fn for pred {pred.name} must be callable.")
    return [p for p, _ in pairs], [f for _, f in pairs]


def _at_most_n_true(predicates: list, n: int, msg: str):
    """An ``Assert`` that at most ``n`` of ``predicates`` are true."""
    preds_c = array_transform.stack(predicates, name="preds_c")
    num_true = reduction.reduce_sum(math_ops.cast(preds_c, dtypes.int32), name="num_true_conds")
    condition = math_ops.less_equal(num_true, constant(n, name="n_true_conds"))
    names = ", ".join(p.name for p in predicates)
    error = [f"{msg}: more than {n} conditions ({names}) evaluated as True:", preds_c]
    return Assert(condition, data=error, summarize=len(predicates))


def _default_from_last(predicates: list, actions: list):
    """No default: the last branch becomes it, asserting that its predicate is true."""
    k = len(predicates) - 1
    predicate, action = predicates[k], actions[k]
    others = predicates[:k]

    def default_action():
        checks = [
            Assert(
                predicate,
                data=[
                    "Input error: None of conditions evaluated as True:",
                    array_transform.stack(predicates, name="preds_c"),
                ],
            )
        ]
        if others:
            checks.insert(
                0,
                _at_most_n_true(
                    others,
                    0,
                    f"Implementation error: selected default action #{k} was called, but "
                    "some of other predicates are True",
                ),
            )
        with control_dependencies(checks):
            return action()

    return default_action, others, actions[:k]


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """The output of the function paired with the first true predicate (``default()`` when
    none is): ``tf.case([(x < 0, neg), (x > 10, big)], default=mid)``."""
    predicates, actions = _pairs(pred_fn_pairs, exclusive)
    if default is not None and not callable(default):
        raise TypeError("default must be callable.")
    if default is None and not predicates:
        raise ValueError("case needs at least one predicate/fn pair, or a default")
    with name_scope(name, "case", predicates):
        if default is None:
            default, predicates, actions = _default_from_last(predicates, actions)
        fn = default
        # Nested in reverse, so that the predicates are tested in order.
        for predicate, action in reversed(list(zip(predicates, actions))):
            fn = functools.partial(cond, predicate, action, fn, strict=strict)
        # (TF checks the predicates left once the last branch became the default)
        if exclusive and len(predicates) > 1:
            with control_dependencies(
                [_at_most_n_true(predicates, 1, "Input error: exclusive=True")]
            ):
                return fn()
        return fn()
