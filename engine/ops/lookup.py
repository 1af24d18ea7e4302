"""Lookup tables: ``HashTableV2`` initialised from tensors or a vocabulary file, then read
with ``LookupTableFindV2`` -- the string vocabularies of TF1 serving graphs.

A table lives in each ``Session`` (like a variable's value): ``HashTableV2`` yields a handle
to the session's table, the initializer ops fill it once, and lookups map keys to values
with a default for keys that are absent. The public API mirrors TF1's ``tf.lookup``:
``StaticHashTable(initializer, default_value)`` with ``KeyValueTensorInitializer`` or
``TextFileInitializer``, and ``tables_initializer()`` runs every table's initializer.
"""

from __future__ import annotations

import os
import threading
import weakref

import numpy as np

from engine import dtypes, errors
from engine.framework.constant_op import convert_to_tensor
from engine.framework.graph import GraphKeys, Tensor, get_default_graph, name_scope
from engine.framework.registry import Attr, OpFlags, op
from engine.ops._common import create
from engine.ops.control_flow import group
from engine.tensor_shape import TensorShape

__all__ = [
    "StaticHashTable",
    "KeyValueTensorInitializer",
    "TextFileInitializer",
    "TextFileIndex",
    "tables_initializer",
    "MAX_VOCABULARY_BYTES",
]

MAX_VOCABULARY_BYTES = 1 << 30
_KEY_TYPES = (dtypes.string, dtypes.int64, dtypes.int32)
_VALUE_TYPES = (dtypes.string, dtypes.int64, dtypes.int32, dtypes.float32, dtypes.float64)


class _Table:
    """One table's contents in one session."""

    __slots__ = ("name", "key_dtype", "value_dtype", "data", "lock", "__weakref__")

    def __init__(self, name, key_dtype, value_dtype):
        self.name, self.key_dtype, self.value_dtype = name, key_dtype, value_dtype
        self.data: dict | None = None
        self.lock = threading.Lock()

    def fill(self, keys, values) -> None:
        with self.lock:
            if self.data is not None:
                # TF: initializing twice is an error unless the contents are the same.
                return
            self.data = dict(zip(keys, values))


# Tables live in host memory and their ops run on the CPU only, as TF's (no GPU kernels):
# without a request they go to the CPU, and a string key or value never leaves the host.
_HOST_TABLE = OpFlags(stateful=True, device_types=("CPU",))

_SESSION_TABLES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_TABLES_LOCK = threading.Lock()


def _table_bind(o, ctx):
    key = o._attrs["shared_name"] or o._name
    with _TABLES_LOCK:
        tables = _SESSION_TABLES.setdefault(ctx.session, {})
        table = tables.get(key)
        if table is None:
            table = tables[key] = _Table(o._name, o._attrs["key_dtype"], o._attrs["value_dtype"])
    return {"table": table}


def _table_infer(o):
    for a, allowed in (("key_dtype", _KEY_TYPES), ("value_dtype", _VALUE_TYPES)):
        if o._attrs[a] not in allowed:
            raise TypeError(f"HashTableV2 {a} {o._attrs[a].name} is not supported")
    return [(dtypes.resource, TensorShape([]))]


@op(
    "HashTableV2",
    infer=_table_infer,
    differentiable=False,
    attrs=(
        Attr("container", "string", default=""),
        Attr("shared_name", "string", default=""),
        Attr("use_node_name_sharing", "bool", default=False),
        Attr("key_dtype", "type"),
        Attr("value_dtype", "type"),
    ),
    bind=_table_bind,
    flags=_HOST_TABLE,
)
def _hash_table(
    xp,
    *,
    container="",
    shared_name="",
    use_node_name_sharing=False,
    key_dtype,
    value_dtype,
    table,
):
    return table


def _check_table_input(o, what):
    if o._inputs[0]._dtype.base_dtype is not dtypes.resource:
        raise TypeError(f"{what} needs a table handle as input 0")


def _init_infer(o):
    _check_table_input(o, o._type)
    return []


def _host_list(a, dtype):
    a = np.asarray(a)
    if dtype is dtypes.string:
        return [v if isinstance(v, bytes) else str(v).encode("utf-8") for v in a.reshape(-1)]
    return a.reshape(-1).tolist()


@op(
    "InitializeTableV2",
    infer=_init_infer,
    differentiable=False,
    inputs=("table_handle", "keys", "values"),
    flags=_HOST_TABLE,
)
def _init_table(xp, table, keys, values):
    if np.shape(keys) != np.shape(values) or np.ndim(keys) != 1:
        raise errors.InvalidArgumentError(
            None, None, "Table keys and values must be vectors of the same length"
        )
    table.fill(_host_list(keys, table.key_dtype), _host_list(values, table.value_dtype))
    return ()


@op(
    "LookupTableImportV2",
    infer=_init_infer,
    differentiable=False,
    inputs=("table_handle", "keys", "values"),
    flags=_HOST_TABLE,
)
def _import_table(xp, table, keys, values):
    # TF 2.x's KeyValueTensorInitializer imports its keys with this op; a static table takes
    # them once, as InitializeTableV2.
    return _init_table(xp, table, keys, values)


def _column(line: bytes, n: int, index: int, delimiter: bytes, dtype, where: str):
    if index == -1:  # LINE_NUMBER
        value = n
    elif index == -2:  # WHOLE_LINE
        value = line
    else:
        cols = line.split(delimiter)
        if index >= len(cols):
            raise errors.InvalidArgumentError(
                None, None, f"{where}: line {n + 1} has no column {index}"
            )
        value = cols[index]
    if dtype is dtypes.string:
        return value if isinstance(value, bytes) else str(value).encode()
    try:
        return dtype.np.type(value.decode() if isinstance(value, bytes) else value).item()
    except (ValueError, UnicodeDecodeError):
        raise errors.InvalidArgumentError(
            None, None, f"{where}: line {n + 1}: {value!r} is not a {dtype.name}"
        ) from None


@op(
    "InitializeTableFromTextFileV2",
    infer=_init_infer,
    differentiable=False,
    inputs=("table_handle", "filename"),
    attrs=(
        Attr("key_index", "int"),
        Attr("value_index", "int"),
        Attr("vocab_size", "int", default=-1),
        Attr("delimiter", "string", default="\t"),
        Attr("offset", "int", default=0),
    ),
    flags=_HOST_TABLE,
)
def _init_from_file(
    xp, table, filename, *, key_index, value_index, vocab_size=-1, delimiter="\t", offset=0
):
    path = np.asarray(filename).item()
    path = path.decode("utf-8") if isinstance(path, bytes) else str(path)
    try:
        size = os.path.getsize(path)
        if size > MAX_VOCABULARY_BYTES:
            raise errors.ResourceExhaustedError(
                None, None, f"vocabulary file {path} is {size} bytes, over the limit"
            )
        with open(path, "rb") as f:
            lines = f.read(size + 1).splitlines()
    except FileNotFoundError:
        raise errors.NotFoundError(None, None, f"vocabulary file {path} not found") from None
    except OSError as e:
        raise errors.InvalidArgumentError(None, None, f"cannot read {path}: {e}") from None
    if vocab_size >= 0:
        if len(lines) < vocab_size:
            raise errors.InvalidArgumentError(
                None, None, f"{path} has {len(lines)} lines, fewer than vocab_size {vocab_size}"
            )
        lines = lines[:vocab_size]
    delim = delimiter.encode("utf-8")
    keys = [_column(ln, i, key_index, delim, table.key_dtype, path) for i, ln in enumerate(lines)]
    values = [
        _column(
            ln, i + offset if value_index == -1 else i, value_index, delim, table.value_dtype, path
        )
        for i, ln in enumerate(lines)
    ]
    table.fill(keys, values)
    return ()


def _find_infer(o):
    _check_table_input(o, "LookupTableFindV2")
    default = o._inputs[2]
    return [(default._dtype.base_dtype, o._inputs[1]._shape)]


@op(
    "LookupTableFindV2",
    infer=_find_infer,
    differentiable=False,
    inputs=("table_handle", "keys", "default_value"),
    flags=_HOST_TABLE,
)
def _find(xp, table, keys, default_value):
    data = table.data
    if data is None:
        raise errors.FailedPreconditionError(None, None, f"Table {table.name} not initialized.")
    keys = np.asarray(keys)
    flat = _host_list(keys, table.key_dtype)
    default = np.asarray(default_value).reshape(-1)
    if default.size != 1:
        raise errors.InvalidArgumentError(None, None, "default_value must be a scalar")
    d = default[0]
    out = [data.get(k, d) for k in flat]
    if table.value_dtype is dtypes.string:
        arr = np.empty(len(out), dtype=object)
        arr[:] = out
    else:
        arr = np.asarray(out, dtype=table.value_dtype.np)
    return xp.asarray(arr.reshape(keys.shape)) if arr.dtype != object else arr.reshape(keys.shape)


@op(
    "LookupTableSizeV2",
    infer=lambda o: [(dtypes.int64, TensorShape([]))],
    differentiable=False,
    inputs=("table_handle",),
    flags=_HOST_TABLE,
)
def _size(xp, table):
    return np.asarray(0 if table.data is None else len(table.data), np.int64)


# -----------------------------------------------------------------------------------------
# Public API (tf.lookup)
# -----------------------------------------------------------------------------------------


class TextFileIndex:
    WHOLE_LINE = -2
    LINE_NUMBER = -1


class KeyValueTensorInitializer:
    """Initializes a table from a vector of keys and a vector of values."""

    def __init__(self, keys, values, key_dtype=None, value_dtype=None, name=None):
        self._keys = convert_to_tensor(keys, dtype=key_dtype)
        self._values = convert_to_tensor(values, dtype=value_dtype)
        self.key_dtype = self._keys.dtype.base_dtype
        self.value_dtype = self._values.dtype.base_dtype
        self._name = name

    def initialize(self, table):
        with name_scope(self._name, "table_init", [table]) as scope:
            return create("InitializeTableV2", [table, self._keys, self._values], {}, scope)


class TextFileInitializer:
    """Initializes a table from a text file: keys and values from columns, the whole line
    (``TextFileIndex.WHOLE_LINE``) or the line number (``TextFileIndex.LINE_NUMBER``)."""

    def __init__(
        self,
        filename,
        key_dtype,
        key_index,
        value_dtype,
        value_index,
        vocab_size=None,
        delimiter="\t",
        name=None,
        value_index_offset=0,
    ):
        self._filename = convert_to_tensor(filename, dtype=dtypes.string)
        self.key_dtype = dtypes.as_dtype(key_dtype)
        self.value_dtype = dtypes.as_dtype(value_dtype)
        self._attrs = {
            "key_index": int(key_index),
            "value_index": int(value_index),
            "vocab_size": -1 if vocab_size is None else int(vocab_size),
            "delimiter": delimiter,
            "offset": int(value_index_offset),
        }
        self._name = name
        get_default_graph().add_to_collection(GraphKeys.ASSET_FILEPATHS, self._filename)

    def initialize(self, table):
        with name_scope(self._name, "text_file_init", [table]) as scope:
            return create(
                "InitializeTableFromTextFileV2", [table, self._filename], self._attrs, scope
            )


class StaticHashTable:
    """An immutable table: ``lookup(keys)`` maps keys to values, ``default_value`` for keys
    not in it. Its initializer joins ``tables_initializer()``."""

    def __init__(self, initializer, default_value, name=None):
        with name_scope(name, "hash_table") as scope:
            self._handle = create(
                "HashTableV2",
                [],
                {
                    "shared_name": "",
                    "key_dtype": initializer.key_dtype,
                    "value_dtype": initializer.value_dtype,
                },
                scope,
            ).outputs[0]
        self._default = convert_to_tensor(default_value, dtype=initializer.value_dtype)
        self.key_dtype, self.value_dtype = initializer.key_dtype, initializer.value_dtype
        self._init_op = initializer.initialize(self._handle)
        get_default_graph().add_to_collection(GraphKeys.TABLE_INITIALIZERS, self._init_op)

    @property
    def resource_handle(self):
        return self._handle

    @property
    def initializer(self):
        return self._init_op

    def lookup(self, keys, name=None):
        # A tensor of another dtype is TF's TypeError, not a failed conversion.
        if not isinstance(keys, Tensor):
            keys = convert_to_tensor(keys, dtype=self.key_dtype)
        if keys.dtype.base_dtype is not self.key_dtype:
            raise TypeError(
                f"Signature mismatch. Keys must be dtype {self.key_dtype}, got {keys.dtype}."
            )
        with name_scope(name, "lookup", [self._handle, keys]) as scope:
            return create(
                "LookupTableFindV2", [self._handle, keys, self._default], {}, scope
            ).outputs[0]

    def size(self, name=None):
        with name_scope(name, "size", [self._handle]) as scope:
            return create("LookupTableSizeV2", [self._handle], {}, scope).outputs[0]


def tables_initializer(name="init_all_tables"):
    """One op running every table initializer of the default graph."""
    inits = get_default_graph().get_collection(GraphKeys.TABLE_INITIALIZERS)
    return group(*inits, name=name)
