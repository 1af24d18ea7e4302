"""Text preprocessing string ops, as TF's CPU kernels: ``StringJoin``, ``ReduceJoin``,
``StringLength``, ``StringLower``/``StringUpper``, ``StringStrip``, the regex ops
(``StaticRegexReplace``/``RegexReplace``, ``StaticRegexFullMatch``/``RegexFullMatch``) and
TF1's ``StringSplit`` and TF2's ``StringSplitV2`` (a SparseTensor's three parts; Keras'
``TextVectorization`` splits with the latter).

Strings are object arrays of bytes on the host. Regexes run on Python's ``re`` over bytes
(TF uses RE2: the common syntax agrees; RE2's ``\\0`` whole-match rewrite is translated;
patterns RE2 rejects, such as backreferences, are not rejected here)."""

from __future__ import annotations

import re
import struct

import numpy as np

from engine import dtypes, errors
from engine.framework.registry import Attr, OpFlags, ShapeError, op
from engine.framework.tensor_util import constant_value
from engine.ops._common import broadcast_shape
from engine.ops.string_ops import _check_string, _object_array, _strings
from engine.tensor_shape import TensorShape

_CPU = OpFlags(device_types=("CPU",))
_CPU_HOST1 = OpFlags(device_types=("CPU",), host_inputs=(1,))
_UNITS = ("BYTE", "UTF8_CHAR")
_WHITESPACE = b" \t\n\v\f\r"


def _same_shape_infer(out_dtype=dtypes.string, what="op"):
    def infer(o):
        _check_string(o, 0, what)
        return [(out_dtype, o._inputs[0]._shape)]

    return infer


def _join_infer(o):
    shape = TensorShape([])
    for i, t in enumerate(o._inputs):
        _check_string(o, i, "StringJoin")
        shape = broadcast_shape(shape, t._shape)
    return [(dtypes.string, shape)]


@op(
    "StringJoin",
    infer=_join_infer,
    differentiable=False,
    inputs=("inputs*",),
    attrs=(Attr("separator", "string", default=""),),
    flags=_CPU,
)
def _string_join(xp, *inputs, separator=""):
    arrays = [np.asarray(a) for a in inputs]
    shapes = {a.shape for a in arrays if a.ndim}
    if len(shapes) > 1:
        raise errors.InvalidArgumentError(
            None, None, f"StringJoin: inputs must be scalars or of one shape, got {sorted(shapes)}"
        )
    shape = shapes.pop() if shapes else ()
    cols = [_strings(np.broadcast_to(a, shape)) for a in arrays]
    sep = separator.encode() if isinstance(separator, str) else separator
    return _object_array([sep.join(parts) for parts in zip(*cols, strict=True)], shape)


def _length_infer(o):
    if o._attrs["unit"] not in _UNITS:
        raise ShapeError(f"unit must be one of {list(_UNITS)}, got {o._attrs['unit']!r}")
    return _same_shape_infer(dtypes.int32, "StringLength")(o)


@op(
    "StringLength",
    infer=_length_infer,
    differentiable=False,
    inputs=("input",),
    attrs=(Attr("unit", "string", default="BYTE"),),
    flags=_CPU,
)
def _string_length(xp, s, *, unit="BYTE"):
    a = np.asarray(s)
    if unit == "BYTE":
        sizes = [len(v) for v in _strings(a)]
    else:  # TF counts the bytes that do not continue a UTF-8 sequence
        sizes = [sum((c & 0xC0) != 0x80 for c in v) for v in _strings(a)]
    return np.array(sizes, np.int32).reshape(a.shape)


def _case_op(op_type, ascii_fn, text_fn):
    @op(
        op_type,
        infer=_same_shape_infer(what=op_type),
        differentiable=False,
        inputs=("input",),
        attrs=(Attr("encoding", "string", default=""),),
        flags=_CPU,
    )
    def kernel(xp, s, *, encoding=""):
        a = np.asarray(s)
        if encoding not in ("", "utf-8"):
            raise errors.InvalidArgumentError(
                None, None, f"{op_type}: encoding must be '' or 'utf-8', got {encoding!r}"
            )
        if encoding == "":
            out = [ascii_fn(v) for v in _strings(a)]
        else:
            out = [text_fn(v.decode("utf-8", "replace")).encode("utf-8") for v in _strings(a)]
        return _object_array(out, a.shape)

    return kernel


def _ascii_map(table):
    return lambda v: v.translate(table)


_LOWER = bytes.maketrans(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ", b"abcdefghijklmnopqrstuvwxyz")
_UPPER = bytes.maketrans(b"abcdefghijklmnopqrstuvwxyz", b"ABCDEFGHIJKLMNOPQRSTUVWXYZ")
_case_op("StringLower", _ascii_map(_LOWER), str.lower)
_case_op("StringUpper", _ascii_map(_UPPER), str.upper)


@op(
    "StringStrip",
    infer=_same_shape_infer(what="StringStrip"),
    differentiable=False,
    inputs=("input",),
    flags=_CPU,
)
def _string_strip(xp, s):
    a = np.asarray(s)
    return _object_array([v.strip(_WHITESPACE) for v in _strings(a)], a.shape)


def _compile(pattern) -> re.Pattern:
    raw = pattern if isinstance(pattern, bytes) else str(pattern).encode("utf-8")
    try:
        return re.compile(raw)
    except re.error as e:
        raise errors.InvalidArgumentError(
            None, None, f"Invalid pattern: {raw.decode('utf-8', 'replace')}, error: {e}"
        ) from None


def _rewrite(rewrite) -> bytes:
    raw = rewrite if isinstance(rewrite, bytes) else str(rewrite).encode("utf-8")
    return re.sub(rb"\\0", rb"\\g<0>", raw)


def _replace(a, pattern, rewrite, replace_global):
    regex, repl = _compile(pattern), _rewrite(rewrite)
    count = 0 if replace_global else 1
    try:
        out = [regex.sub(repl, v, count=count) for v in _strings(a)]
    except (re.error, IndexError) as e:
        raise errors.InvalidArgumentError(None, None, f"Invalid rewrite pattern: {e}") from None
    return _object_array(out, a.shape)


@op(
    "StaticRegexReplace",
    infer=_same_shape_infer(what="StaticRegexReplace"),
    differentiable=False,
    inputs=("input",),
    attrs=(
        Attr("pattern", "string"),
        Attr("rewrite", "string"),
        Attr("replace_global", "bool", default=True),
    ),
    flags=_CPU,
)
def _static_regex_replace(xp, s, *, pattern, rewrite, replace_global=True):
    return _replace(np.asarray(s), pattern, rewrite, replace_global)


def _scalar_strings_infer(what, n):
    def infer(o):
        for i in range(n):
            _check_string(o, i, what)
        for t in o._inputs[1:]:
            if t._shape.rank not in (None, 0):
                raise ShapeError(f"Shape must be rank 0 but is rank {t._shape.rank}")
        return [(dtypes.bool if what.endswith("Match") else dtypes.string, o._inputs[0]._shape)]

    return infer


def _scalar(v) -> bytes:
    return _strings(np.asarray(v))[0]


@op(
    "RegexReplace",
    infer=_scalar_strings_infer("RegexReplace", 3),
    differentiable=False,
    inputs=("input", "pattern", "rewrite"),
    attrs=(Attr("replace_global", "bool", default=True),),
    flags=OpFlags(device_types=("CPU",), host_inputs=(1, 2)),
)
def _regex_replace(xp, s, pattern, rewrite, *, replace_global=True):
    return _replace(np.asarray(s), _scalar(pattern), _scalar(rewrite), replace_global)


def _full_match(a, pattern):
    regex = _compile(pattern)
    return np.array([regex.fullmatch(v) is not None for v in _strings(a)], bool).reshape(a.shape)


@op(
    "StaticRegexFullMatch",
    infer=_same_shape_infer(dtypes.bool, "StaticRegexFullMatch"),
    differentiable=False,
    inputs=("input",),
    attrs=(Attr("pattern", "string"),),
    flags=_CPU,
)
def _static_full_match(xp, s, *, pattern):
    return _full_match(np.asarray(s), pattern)


@op(
    "RegexFullMatch",
    infer=_scalar_strings_infer("RegexFullMatch", 2),
    differentiable=False,
    inputs=("input", "pattern"),
    flags=_CPU_HOST1,
)
def _regex_full_match(xp, s, pattern):
    return _full_match(np.asarray(s), _scalar(pattern))


def _split_infer(o):
    _check_string(o, 0, "StringSplit")
    _check_string(o, 1, "StringSplit")
    if o._inputs[0]._shape.rank not in (None, 1):
        raise ShapeError(f"Shape must be rank 1 but is rank {o._inputs[0]._shape.rank}")
    if o._inputs[1]._shape.rank not in (None, 0):
        raise ShapeError(f"Shape must be rank 0 but is rank {o._inputs[1]._shape.rank}")
    return [
        (dtypes.int64, TensorShape([None, 2])),
        (dtypes.string, TensorShape([None])),
        (dtypes.int64, TensorShape([2])),
    ]


def _sparse_rows(rows: list) -> tuple:
    """Token lists as a SparseTensor's (indices, values, dense_shape)."""
    indices = [(i, j) for i, row in enumerate(rows) for j in range(len(row))]
    values = [t for row in rows for t in row]
    width = max((len(row) for row in rows), default=0)
    return (
        np.array(indices, np.int64).reshape(-1, 2),
        _object_array(values, (len(values),)),
        np.array([len(rows), width], np.int64),
    )


def _split_one(v: bytes, delimiter: bytes, skip_empty: bool) -> list:
    if not v:  # an empty string has no tokens, even kept-empty ones (TF's kernel)
        return []
    if not delimiter:
        return [v[i : i + 1] for i in range(len(v))]
    tokens = re.split(b"[" + re.escape(delimiter) + b"]", v)
    return [t for t in tokens if t] if skip_empty else tokens


@op(
    "StringSplit",
    infer=_split_infer,
    differentiable=False,
    inputs=("input", "delimiter"),
    attrs=(Attr("skip_empty", "bool", default=True),),
    flags=_CPU_HOST1,
)
def _string_split(xp, s, delimiter, *, skip_empty=True):
    rows = [_split_one(v, _scalar(delimiter), skip_empty) for v in _strings(np.asarray(s))]
    return _sparse_rows(rows)


def _split_v2_one(v: bytes, sep: bytes, maxsplit: int) -> list:
    """TF's ``SplitV2``: an empty separator splits on runs of ASCII whitespace (leading
    whitespace dropped). After ``maxsplit`` splits the rest is one more token, even when
    empty; ``maxsplit`` 0 leaves the string whole, even an empty one."""
    if maxsplit == 0:
        return [v]
    out = []
    if sep:
        text = v
        while True:
            at = text.find(sep)
            if at < 0:
                out.append(text)
                return out
            out.append(text[:at])
            text = text[at + len(sep) :]
            if len(out) == maxsplit:
                out.append(text)
                return out
    text = v.lstrip(_WHITESPACE)
    while text:
        end = next((i for i, c in enumerate(text) if c in _WHITESPACE), len(text))
        out.append(text[:end])
        text = text[end:].lstrip(_WHITESPACE)
        if len(out) == maxsplit:
            out.append(text)
            return out
    return out


@op(
    "StringSplitV2",
    infer=_split_infer,
    differentiable=False,
    inputs=("input", "sep"),
    attrs=(Attr("maxsplit", "int", default=-1),),
    flags=_CPU_HOST1,
)
def _string_split_v2(xp, s, sep, *, maxsplit=-1):
    separator = _scalar(sep)
    rows = [_split_v2_one(v, separator, maxsplit) for v in _strings(np.asarray(s))]
    return _sparse_rows(rows)


def _reduce_join_infer(o):
    _check_string(o, 0, "ReduceJoin")
    x, axes_t = o._inputs
    axes = constant_value(axes_t)
    dims = x._shape.as_tuple()
    if axes is None or dims is None:
        return [(dtypes.string, TensorShape(None))]
    axes = [int(a) for a in np.asarray(axes).ravel()]
    norm = [a + len(dims) if a < 0 else a for a in axes]
    for a, n in zip(axes, norm, strict=True):
        if not 0 <= n < len(dims):
            raise ShapeError(f"Invalid reduction dimension {a} for input with {len(dims)} dims")
    if len(set(norm)) != len(norm):
        raise ShapeError(f"Duplicate reduction dimension in {axes}")
    keep = o._attrs["keep_dims"]
    out = [1 if i in norm else d for i, d in enumerate(dims)] if keep else None
    if out is None:
        out = [d for i, d in enumerate(dims) if i not in norm]
    return [(dtypes.string, TensorShape(out))]


@op(
    "ReduceJoin",
    infer=_reduce_join_infer,
    differentiable=False,
    inputs=("inputs", "reduction_indices"),
    attrs=(
        Attr("keep_dims", "bool", default=False),
        Attr("separator", "string", default=""),
    ),
    flags=_CPU_HOST1,
)
def _reduce_join(xp, s, axes, *, keep_dims=False, separator=""):
    a = np.asarray(s)
    norm = _reduction_axes(np.asarray(axes), a.ndim)
    kept = [i for i in range(a.ndim) if i not in norm]
    # The first listed axis varies fastest, as TF's kernel joins.
    out_shape = [a.shape[i] for i in kept]
    sep = separator.encode() if isinstance(separator, str) else separator
    groups = int(np.prod(out_shape, dtype=np.int64))
    if a.size == 0:
        joined = [b""] * groups
    else:
        rows = a.transpose(kept + norm[::-1]).reshape(groups, -1)
        joined = [sep.join(_strings(row)) for row in rows]
    result = _object_array(joined, out_shape)
    if keep_dims:
        result = result.reshape([1 if i in norm else d for i, d in enumerate(a.shape)])
    return result


def _reduction_axes(axes: np.ndarray, rank: int) -> list:
    norm = []
    for a in axes.ravel().tolist():
        n = a + rank if a < 0 else a
        if not 0 <= n < rank:
            raise errors.OutOfRangeError(
                None, None, f"Invalid reduction dimension {a} for input with {rank} dimension(s)"
            )
        if n in norm:
            raise errors.InvalidArgumentError(None, None, f"Duplicate reduction dimension {a}")
        norm.append(n)
    return norm


_M64 = (1 << 64) - 1
_MURMUR_M = 0xC6A4A7935BD1E995
_HASH64_SEED = 0xDECAFCAFFE


def hash64(data: bytes, seed: int = _HASH64_SEED) -> int:
    """TF's legacy ``Hash64`` (a MurmurHash64A over little-endian 8-byte words)."""
    n = len(data)
    h = (seed ^ (n * _MURMUR_M)) & _M64
    full = n - n % 8
    for (k,) in struct.iter_unpack("<Q", data[:full]):
        k = (k * _MURMUR_M) & _M64
        k ^= k >> 47
        h ^= (k * _MURMUR_M) & _M64
        h = (h * _MURMUR_M) & _M64
    if n > full:
        h ^= int.from_bytes(data[full:], "little")
        h = (h * _MURMUR_M) & _M64
    h ^= h >> 47
    h = (h * _MURMUR_M) & _M64
    return h ^ (h >> 47)


def _hash_bucket_infer(o):
    _check_string(o, 0, "StringToHashBucket")
    if o._attrs["num_buckets"] < 1:
        raise ShapeError(f"num_buckets must be >= 1, got {o._attrs['num_buckets']}")
    return [(dtypes.int64, o._inputs[0]._shape)]


@op(
    "StringToHashBucket",
    infer=_hash_bucket_infer,
    differentiable=False,
    inputs=("string_tensor",),
    attrs=(Attr("num_buckets", "int"),),
    flags=_CPU,
)
def _string_to_hash_bucket(xp, s, *, num_buckets):
    a = np.asarray(s)
    buckets = [hash64(v) % num_buckets for v in _strings(a)]
    return np.array(buckets, np.int64).reshape(a.shape)
