"""TF1's ``tf.summary``: summary ops (``scalar``, ``histogram``, ``image``, ``text``),
``merge``/``merge_all``, and ``FileWriter``, which writes TensorBoard event files.

>>> tf.summary.scalar("loss", loss)
>>> merged = tf.summary.merge_all()
>>> writer = tf.summary.FileWriter("logs/run1", sess.graph)
>>> writer.add_summary(sess.run(merged, feed), global_step=step)
"""

from __future__ import annotations

import re

from engine import dtypes, tf_logging
from engine.framework.constant_op import constant, convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, add_to_collection, get_collection, name_scope
from engine.ops._common import create
from engine.summary.writer import FileWriter, FileWriterCache
from engine.util import summary_records as records

__all__ = [
    "scalar",
    "histogram",
    "image",
    "text",
    "merge",
    "merge_all",
    "FileWriter",
    "FileWriterCache",
]


_INVALID_TAG_CHARACTERS = re.compile(r"[^-/\w.]")


def _clean_tag(name):
    """TF1's ``clean_tag``: characters a tag or scope cannot hold become ``_`` and leading
    slashes go, so ``tf.summary.histogram(var.name, var)`` ("W1:0") is tagged "W1_0"."""
    if name is None:
        return None
    new_name = _INVALID_TAG_CHARACTERS.sub("_", name).lstrip("/")
    if new_name != name:
        tf_logging.info("Summary name %s is illegal; using %s instead.", name, new_name)
    return new_name


def _summary_scope(name, family, values):
    """(tag, scope) as TF1's ``summary_scope``: the tag is the name-scoped name, prefixed by
    ``family`` when given; both are cleaned first."""
    name, family = _clean_tag(name), _clean_tag(family)
    if family:
        return name_scope(f"{family}/{name}", values=values)
    return name_scope(name, values=values)


def _collect(op_out: Tensor, collections) -> Tensor:
    for key in collections if collections is not None else [GraphKeys.SUMMARIES]:
        add_to_collection(key, op_out)
    return op_out


def _tag(scope: str, family) -> str:
    # As TF1's summary_scope: with a family, the tag is the family again, then the scope
    # (which itself starts with the family), so it shows in the family's TensorBoard tab.
    family = _clean_tag(family)
    return f"{family}/{scope.rstrip('/')}" if family else scope.rstrip("/")


def _check_name(name) -> str:
    if not isinstance(name, str) or not name:
        raise ValueError(f"Summary name must be a non-empty string, got {name!r}")
    return name


def scalar(name, tensor, collections=None, family=None) -> Tensor:
    """A ``Summary`` holding one scalar value, tagged by ``name`` within the name scope."""
    with _summary_scope(_check_name(name), family, [tensor]) as scope:
        x = convert_to_tensor(tensor)
        if x.shape.rank not in (None, 0):
            raise ValueError(f"Shape {x.shape} must have rank 0")
        tag = constant(_tag(scope, family), dtype=dtypes.string, name="tags")
        out = create("ScalarSummary", [tag, x], {}, scope).outputs[0]
    return _collect(out, collections)


def histogram(name, values, collections=None, family=None) -> Tensor:
    """A histogram of every value of ``values`` (TF's exponential buckets)."""
    with _summary_scope(_check_name(name), family, [values]) as scope:
        x = convert_to_tensor(values)
        tag = constant(_tag(scope, family), dtype=dtypes.string, name="tag")
        out = create("HistogramSummary", [tag, x], {}, scope).outputs[0]
    return _collect(out, collections)


def image(name, tensor, max_outputs=3, collections=None, family=None) -> Tensor:
    """Up to ``max_outputs`` images of a ``[batch, height, width, 1|3|4]`` tensor, as PNGs.

    uint8 images are written as they are; float images are scaled as TF scales them.
    """
    if int(max_outputs) < 1:
        raise ValueError(f"max_outputs must be positive, got {max_outputs}")
    with _summary_scope(_check_name(name), family, [tensor]) as scope:
        x = convert_to_tensor(tensor)
        tag = constant(_tag(scope, family), dtype=dtypes.string, name="tag")
        attrs = {"max_images": int(max_outputs)}
        out = create("ImageSummary", [tag, x], attrs, scope).outputs[0]
    return _collect(out, collections)


def text(name, tensor, collections=None) -> Tensor:
    """A string tensor for TensorBoard's text plugin."""
    with _summary_scope(_check_name(name), None, [tensor]) as scope:
        x = convert_to_tensor(tensor)
        if x.dtype.base_dtype is not dtypes.string:
            raise ValueError(f"Expected tensor {x.name} to have dtype string, got {x.dtype}")
        tag = constant(_tag(scope, None), dtype=dtypes.string)
        meta = constant(records.plugin_metadata("text"), dtype=dtypes.string)
        out = create("TensorSummaryV2", [tag, x, meta], {}, scope).outputs[0]
    return _collect(out, collections)


def merge(inputs, collections=None, name=None) -> Tensor:
    """One ``Summary`` with the values of every input summary (duplicate tags fail)."""
    inputs = [convert_to_tensor(i) for i in inputs]
    with name_scope(name, "Merge", inputs) as scope:
        out = create("MergeSummary", inputs, {}, scope).outputs[0]
    for key in collections or []:
        add_to_collection(key, out)
    return out


def merge_all(key=GraphKeys.SUMMARIES, scope=None, name=None) -> Tensor | None:
    """``merge`` of every summary in the collection ``key``; None when it is empty."""
    summaries = get_collection(key, scope=scope)
    if not summaries:
        return None
    return merge(summaries, name=name)
