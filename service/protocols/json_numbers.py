"""JSON request bodies whose tensors are read straight into arrays, without a Python float per
number.

``orjson.loads`` makes a Python object of every number in a body, which the tensor code then
converts again (``service.tensors.float_array``): together most of a JSON request's parse
time. With pysimdjson installed (the ``fast`` extra), ``parse_predict`` and ``parse_infer``
parse the body into simdjson's tape instead and copy each list of numbers where a protocol
reads a tensor from it into one buffer of doubles (``Array.as_buffer``): TF Serving's
``instances``, ``inputs`` and each value of an ``inputs`` object, and KServe V2's
``inputs[i].data``. Everything else in the document becomes the Python values
``parse_json`` gives.

The document is ``parse_json(raw)``'s, except that each such list is a ``JsonNumbers``: its
numbers as float64 already, from which the protocols take the array their list path would
make (``floats``, ``integers``), or the exact list to take that path with (``tolist``). A
``JsonNumbers`` is only made of a list the copy can vouch for: non-empty, rectangular (every
list of each level as long as the first, checked list by list down to the innermost ones,
which hold only numbers: the buffer copy refuses bools, nulls, strings and objects, and the
body's ``[`` count shows that no list hides in an innermost one), at most 32 levels deep.

Whatever the fast parse cannot vouch for makes it give up and ``parse_json`` parse the body,
so that every error is today's: invalid JSON or what orjson reads differently (integers
beyond 64 bits, numbers beyond float64's range, NaN tokens, a byte order mark), duplicate
keys (orjson keeps the last, a simdjson lookup finds the first), non-UTF-8 text, a ``[`` in a
string (the count would not match), a body that is not an object, or any exception at all.
It also gives up where orjson is faster or leaner: bodies under 2 KiB (too few numbers to pay
for its fixed cost) or over 4 MiB (while a request runs its document keeps the simdjson
parse, ~3x the memory of orjson's lists of small integers), an object of more than 64 keys
(each pysimdjson lookup scans its object), a key holding U+0000 (looked up as a C string, it
would find another key), anything but a list of numbers where a tensor goes (strings, b64
objects, named instances, ragged rows), and more than 256 values in all outside the tensors,
nested ones included (pysimdjson makes Python values several times slower than orjson); those
cost a simdjson parse more than before (about 1 us per KiB of numbers).
``ENABLED`` switches the fast parse off (without pysimdjson it is off).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from service.protocols.common import parse_json

try:  # optional: the ``fast`` extra
    import simdjson
except ImportError:  # pragma: no cover - depends on the environment
    simdjson = None

__all__ = ["ENABLED", "JsonNumbers", "parse_predict", "parse_infer", "load_predict", "load_infer"]

ENABLED = simdjson is not None
_Array = simdjson.Array if simdjson is not None else ()
_Object = simdjson.Object if simdjson is not None else ()
_MAX_DEPTH = 32  # as service.tensors: deeper lists are the list path's to refuse
_MAX_DIMS = 32  # an input's shape no longer than this is read in one call (_Tally.dims)
# Magnitudes below which a float64 from JSON is exactly the number a float or an integer
# token wrote (float_array's bound for float32 and float64).
_EXACT_LIMIT = 2.0**53
_FLOAT_TYPES = frozenset({np.dtype(np.float32), np.dtype(np.float64)})
_BOM = b"\xef\xbb\xbf"
# Smaller bodies are orjson's: they hold too few numbers to pay for the fast parse's fixed
# cost (a few microseconds; float bodies break even at ~3-6 KiB, integer ones at ~1 KiB),
# and an API's small objects are no tensors.
_MIN_BODY = 2048
# Larger bodies are orjson's too: while a request runs, its document keeps the whole simdjson
# parse (tape, indexes, the float64 copy), ~3x what orjson's lists of small integers hold.
_MAX_BODY = 4 << 20
# Keys of one object, and values in all (nested) of the document's values outside the
# tensors. Beyond, the body is orjson's: a pysimdjson key lookup scans its object (n keys
# would cost n^2), and it makes Python values several times slower than orjson.
_MAX_PLAIN = 64
_MAX_PLAIN_VALUES = 256
_max = np.maximum.reduce


class JsonNumbers:
    """A rectangular list of JSON numbers from a request body, read as float64 (see the
    module's docstring). ``shape``: its nesting, ``(rows, columns)`` for a list of rows."""

    __slots__ = ("_array", "_values", "shape")

    def __init__(self, array: Any, values: np.ndarray, shape: tuple[int, ...]):
        self._array = array  # the simdjson list, for the integers and the Python list
        self._values = values
        self.shape = shape

    def floats(self, dtype: np.dtype) -> np.ndarray | None:
        """The array ``float_array(self.tolist(), dtype)`` makes, for float32 and float64;
        None for other types, or when a magnitude reaches 2**53 (an integer read as a float64
        may have been rounded: the list path decides about those)."""
        if dtype not in _FLOAT_TYPES:
            return None
        values = self._values
        # (one pass for the magnitudes, then one reduction: cheaper than a minimum and a
        # maximum over the values)
        if not _max(np.abs(values), None) < _EXACT_LIMIT:
            return None
        return values.astype(dtype).reshape(self.shape)

    def integers(self) -> np.ndarray | None:
        """The int64 array ``from_json_value(self.tolist())`` makes when every number is an
        integer token that int64 holds; None otherwise (a float token, or beyond int64)."""
        try:
            buffer = self._array.as_buffer(of_type="i")
        except (TypeError, ValueError):
            return None
        return np.frombuffer(buffer, np.int64).reshape(self.shape)

    def tolist(self) -> list:
        """The list ``parse_json`` gives for these numbers (ints as ints, floats as floats)."""
        return self._array.as_list()

    def release(self) -> None:
        """Lets the parse go once its array has been taken: ``floats``, ``integers`` and
        ``tolist`` may not be asked again. A request keeps its document until it is
        answered, and the simdjson parse behind these numbers (its parser's tape, strings,
        indexes and copy of the body: 243 KiB for a 16 KiB body of 784 floats) with it.
        Released as soon as the tensor is made, the next body's parse reuses that memory
        while it is still in the cache; kept, a batch's parsers grew the heap by megabytes,
        which glibc gave back to the OS when they were freed together and the next batch
        faulted in again (bench/README.md, stop 27)."""
        self._array = self._values = None

    def __repr__(self) -> str:
        return f"JsonNumbers(shape={list(self.shape)})"


def parse_predict(raw: bytes) -> Any:
    """A TF Serving predict body: ``load_predict``'s document, or ``parse_json``'s."""
    doc = load_predict(raw)
    return parse_json(raw) if doc is None else doc


def parse_infer(raw: bytes, what: str = "The request body") -> Any:
    """A KServe V2 inference request: ``load_infer``'s document, or ``parse_json``'s."""
    doc = load_infer(raw)
    return parse_json(raw, what) if doc is None else doc


def load_predict(raw: bytes) -> dict | None:
    """TF Serving's predict body with ``instances``, ``inputs`` and each value of an
    ``inputs`` object as ``JsonNumbers`` where they are lists of numbers; None when the fast
    parse is off or cannot vouch for the document."""
    return _load(raw, _predict_document)


def load_infer(raw: bytes) -> dict | None:
    """A V2 inference request with each input's ``data`` as ``JsonNumbers`` where it is a
    list of numbers; None when the fast parse is off or cannot vouch for the document."""
    return _load(raw, _infer_document)


class _DoubtError(Exception):
    """The fast parse gives up: ``parse_json`` takes the body."""


class _Tally:
    """The lists made while building a document: the body must hold exactly that many
    ``[``, which shows that no list hides among an innermost list's numbers. (A ``[`` in a
    string only adds to the body's count: the fast parse then gives up.)"""

    __slots__ = ("lists", "plain_left")

    def __init__(self):
        self.lists = 0
        self.plain_left = _MAX_PLAIN_VALUES  # values outside the tensors still allowed

    def plain(self, value):
        """``value`` (a simdjson value) as the Python value ``parse_json`` gives, its lists
        counted; a large list or object is a doubt (pysimdjson makes Python values several
        times slower than orjson: such a body is orjson's)."""
        if not isinstance(value, (_Object, _Array)):
            return value
        self._spend(value)
        value = value.as_dict() if isinstance(value, _Object) else value.as_list()
        stack = [value]
        while stack:
            item = stack.pop()
            if type(item) is list:
                self.lists += 1
                stack.extend(item)
            elif type(item) is dict:
                stack.extend(item.values())
        return value

    def dims(self, value) -> list:
        """``plain(value)`` for an input's ``shape``: a short list of integers is taken in
        one call and counted as ``plain`` counts it (without its walks over a list that
        holds no list); anything else is ``plain``'s."""
        n = len(value)
        if n <= _MAX_DIMS:
            dims = value.as_list()
            if all(type(d) is int for d in dims):
                self.plain_left -= n
                if self.plain_left < 0:
                    raise _DoubtError
                self.lists += 1
                return dims
        return self.plain(value)

    def _spend(self, value) -> None:
        """Counts the values inside ``value`` (all levels) against ``plain_left``, looking
        no further once it is spent: a doubt then."""
        stack = [value]
        while stack:
            item = stack.pop()
            n = len(item)
            self.plain_left -= n
            if n > _MAX_PLAIN or self.plain_left < 0:
                raise _DoubtError
            # (Object.values() would make Python values of everything below: look up)
            children = [item[k] for k in item.keys()] if isinstance(item, _Object) else item
            for child in children:
                if isinstance(child, (_Object, _Array)):
                    stack.append(child)

    def tensor(self, value):
        """``value`` as ``JsonNumbers`` when it is a list the copy can vouch for; anything
        else there (strings, b64 objects, named instances, ragged rows, ...) is a doubt:
        orjson's path reads and judges it (faster than pysimdjson's Python values)."""
        if not isinstance(value, _Array):
            return self.plain(value)
        shape = _rectangle(value)
        if shape is None:
            raise _DoubtError
        # A bool, null, string or object among the numbers: TypeError, a doubt.
        values = np.frombuffer(value.as_buffer(of_type="d"), np.float64)
        if values.size != math.prod(shape):  # a guard: the row checks and the count
            raise _DoubtError  # of "[" already rule this out
        rows = 1
        for n in shape[:-1]:
            self.lists += rows
            rows *= n
        self.lists += rows
        return JsonNumbers(value, values, shape)

    def balanced(self, raw: bytes) -> bool:
        """Whether ``raw`` holds exactly as many ``[`` as lists were made."""
        expected = self.lists
        if expected > 16:
            return raw.count(b"[") == expected
        at = -1
        for _ in range(expected):  # a few memchr scans: cheaper than counting every byte
            at = raw.find(b"[", at + 1)
            if at < 0:
                return False
        return raw.find(b"[", at + 1) < 0


def _rectangle(array) -> tuple[int, ...] | None:
    """The shape of ``array`` when every list of each level but the innermost is a list of
    lists as long as the first of its level (checked one by one: ~0.1 us a list, less than
    orjson's path spends on a number), and the first innermost value is a number; None
    otherwise. (Whether the innermost lists hold only numbers is left to the buffer copy and
    the ``[`` count.)"""
    shape = []
    node = array
    while isinstance(node, _Array):
        if not len(node) or len(shape) == _MAX_DEPTH:
            return None
        shape.append(len(node))
        node = node[0]
    if type(node) is bool or not isinstance(node, (int, float)):
        return None
    if shape[0] == 1 and len(shape) <= 2:
        return tuple(shape)  # one row (the first), measured above
    level = [array]
    for n in shape[1:]:
        below = []
        for row in level:
            for item in row:
                if not isinstance(item, _Array) or len(item) != n:
                    return None
                below.append(item)
        level = below
    return tuple(shape)


def _keys(obj) -> list[str]:
    """``obj``'s keys, each to be looked up once; a doubt for more than ``_MAX_PLAIN`` (each
    lookup scans the object), duplicates (orjson keeps the last of duplicate keys, a lookup
    here the first) and a key holding U+0000 (pysimdjson looks keys up as C strings: one
    would find the key cut at it)."""
    if len(obj) > _MAX_PLAIN:
        raise _DoubtError
    keys = list(obj.keys())
    if len(keys) > 1 and len(set(keys)) != len(keys):
        raise _DoubtError
    for key in keys:
        if "\x00" in key:
            raise _DoubtError
    return keys


def _predict_document(doc, tally: _Tally) -> dict:
    out = {}
    for key in _keys(doc):
        value = doc[key]
        if key == "instances" or (key == "inputs" and not isinstance(value, _Object)):
            out[key] = tally.tensor(value)
        elif key == "inputs":  # named inputs
            out[key] = {a: tally.tensor(value[a]) for a in _keys(value)}
        else:
            out[key] = tally.plain(value)
    return out


def _infer_document(doc, tally: _Tally) -> dict:
    out = {}
    for key in _keys(doc):
        value = doc[key]
        if key == "inputs" and isinstance(value, _Array):
            tally.lists += 1
            out[key] = [
                _infer_input(item, tally) if isinstance(item, _Object) else tally.plain(item)
                for item in value
            ]
        else:
            out[key] = tally.plain(value)
    return out


def _infer_input(item, tally: _Tally) -> dict:
    out = {}
    for key in _keys(item):
        value = item[key]
        if key == "data":
            out[key] = tally.tensor(value)
        elif key == "shape" and isinstance(value, _Array):
            out[key] = tally.dims(value)
        elif isinstance(value, (_Object, _Array)):
            out[key] = tally.plain(value)
        else:  # name, datatype: no call for a string
            out[key] = value
    return out


def _load(raw: bytes, build: Callable[[Any, _Tally], dict]) -> dict | None:
    if not ENABLED or not _MIN_BODY <= len(raw) <= _MAX_BODY or raw.startswith(_BOM):
        return None
    tally = _Tally()
    try:
        # A parser per body: its values stay valid while a document refers to them, and
        # no two requests share one (a parser refuses a new body while values of the last
        # one live).
        doc = simdjson.Parser().parse(raw)
        if not isinstance(doc, _Object):
            return None
        out = build(doc, tally)
    except Exception:  # noqa: BLE001 - any doubt (an error, a duplicate key) is parse_json's
        return None
    return out if tally.balanced(raw) else None
