"""TF1's text functions over the string kernels of ``engine/ops/string_more.py``:
``tf.strings.join``/``length``/``lower``/``upper``/``strip``/``regex_replace``/
``regex_full_match``/``reduce_join`` and their TF1 top-level names (``tf.string_join``,
``tf.string_strip``, ``tf.regex_replace``, ``tf.reduce_join``), and ``tf.string_split``, which
returns a ``SparseTensor``. TF's ``tf.strings.split`` returns a RaggedTensor, which the
engine does not have, so it is not offered."""

from __future__ import annotations

from engine import dtypes
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import Tensor, name_scope
from engine.framework.sparse_tensor import SparseTensor
from engine.ops import array as array_ops
from engine.ops._common import create

__all__ = [
    "join",
    "length",
    "lower",
    "upper",
    "strip",
    "regex_replace",
    "regex_full_match",
    "reduce_join",
    "string_split",
    "to_hash_bucket",
]


def _string(x, name="input") -> Tensor:
    return convert_to_tensor(x, dtype=dtypes.string, name=name)


def _unary(op_type, value, attrs, name, default_name=None):
    with name_scope(name, default_name or op_type, [value]) as scope:
        return create(op_type, [_string(value)], attrs, scope).outputs[0]


def join(inputs, separator="", name=None) -> Tensor:
    """Elementwise concatenation of same-shaped (or scalar) string tensors."""
    if not isinstance(inputs, (list, tuple)):
        raise TypeError(f"inputs must be a list of string tensors, got {type(inputs).__name__}")
    with name_scope(name, "StringJoin", list(inputs)) as scope:
        ts = [_string(x, "inputs") for x in inputs]
        return create("StringJoin", ts, {"separator": separator}, scope).outputs[0]


def length(input, name=None, unit="BYTE") -> Tensor:  # noqa: A002 - TF's name
    """The length of each string, in bytes or (``unit="UTF8_CHAR"``) UTF-8 characters."""
    return _unary("StringLength", input, {"unit": unit}, name)


def lower(input, encoding="", name=None) -> Tensor:  # noqa: A002
    """ASCII lowercase (``encoding="utf-8"``: Unicode lowercase)."""
    return _unary("StringLower", input, {"encoding": encoding}, name)


def upper(input, encoding="", name=None) -> Tensor:  # noqa: A002
    """ASCII uppercase (``encoding="utf-8"``: Unicode uppercase)."""
    return _unary("StringUpper", input, {"encoding": encoding}, name)


def strip(input, name=None) -> Tensor:  # noqa: A002
    """Each string without leading and trailing ASCII whitespace."""
    return _unary("StringStrip", input, {}, name)


def _is_text(x) -> bool:
    return isinstance(x, (str, bytes))


def regex_replace(input, pattern, rewrite, replace_global=True, name=None) -> Tensor:  # noqa: A002
    """Replaces ``pattern`` matches (all, or the first) with ``rewrite`` (``\\1``: group 1,
    ``\\0``: the whole match). Python-string patterns build ``StaticRegexReplace``."""
    if _is_text(pattern) and _is_text(rewrite):
        attrs = {
            "pattern": pattern if isinstance(pattern, str) else pattern.decode("utf-8"),
            "rewrite": rewrite if isinstance(rewrite, str) else rewrite.decode("utf-8"),
            "replace_global": bool(replace_global),
        }
        return _unary("StaticRegexReplace", input, attrs, name)
    with name_scope(name, "RegexReplace", [input, pattern, rewrite]) as scope:
        ts = [_string(input), _string(pattern, "pattern"), _string(rewrite, "rewrite")]
        attrs = {"replace_global": bool(replace_global)}
        return create("RegexReplace", ts, attrs, scope).outputs[0]


def regex_full_match(input, pattern, name=None) -> Tensor:  # noqa: A002
    """Whether each whole string matches ``pattern`` (bool)."""
    if _is_text(pattern):
        text = pattern if isinstance(pattern, str) else pattern.decode("utf-8")
        return _unary("StaticRegexFullMatch", input, {"pattern": text}, name)
    with name_scope(name, "RegexFullMatch", [input, pattern]) as scope:
        ts = [_string(input), _string(pattern, "pattern")]
        return create("RegexFullMatch", ts, {}, scope).outputs[0]


def _deprecated_alias(new, old, new_name, old_name):
    if new is not None and old is not None:
        raise ValueError(f"Cannot specify both '{new_name}' and '{old_name}'")
    return new if new is not None else old


def reduce_join(
    inputs,
    axis=None,
    keep_dims=None,
    separator="",
    name=None,
    reduction_indices=None,
    keepdims=None,
) -> Tensor:
    """Joins strings along ``axis`` (all axes when None; the first axis listed varies fastest,
    as TF's ``ReduceJoin``)."""
    axis = _deprecated_alias(axis, reduction_indices, "axis", "reduction_indices")
    keepdims = bool(_deprecated_alias(keepdims, keep_dims, "keepdims", "keep_dims"))
    with name_scope(name, "ReduceJoin", [inputs]) as scope:
        x = _string(inputs, "inputs")
        if axis is None:
            rank = x.shape.rank
            if rank is not None:
                axis = list(range(rank - 1, -1, -1))
            else:
                axis = array_ops.range(array_ops.rank(x) - 1, -1, -1)
        axes = convert_to_tensor(axis, dtype=dtypes.int32, name="reduction_indices")
        attrs = {"keep_dims": keepdims, "separator": separator}
        return create("ReduceJoin", [x, axes], attrs, scope).outputs[0]


def string_split(
    source, sep=None, skip_empty=True, delimiter=None, result_type="SparseTensor", name=None
) -> SparseTensor:
    """TF1's ``tf.string_split``: each string of the 1-D ``source`` split at any byte of
    ``delimiter`` (default a space; empty: into bytes), as a ``SparseTensor`` of
    ``[len(source), longest split]``. ``skip_empty`` drops empty tokens."""
    delimiter = _deprecated_alias(delimiter, sep, "delimiter", "sep")
    if result_type != "SparseTensor":
        raise ValueError(
            f"string_split result_type {result_type!r} is not supported: the engine has no "
            "RaggedTensor, use 'SparseTensor'"
        )
    with name_scope(name, "StringSplit", [source]) as scope:
        s = _string(source, "source")
        d = _string(" " if delimiter is None else delimiter, "delimiter")
        op = create("StringSplit", [s, d], {"skip_empty": bool(skip_empty)}, scope)
        return SparseTensor(*op.outputs)


def to_hash_bucket(string_tensor, num_buckets, name=None) -> Tensor:
    """TF1's ``tf.string_to_hash_bucket``: ``Hash64(s) % num_buckets`` (int64), TF's legacy
    hash (``to_hash_bucket_fast`` is the recommended one)."""
    attrs = {"num_buckets": int(num_buckets)}
    return _unary("StringToHashBucket", string_tensor, attrs, name)
