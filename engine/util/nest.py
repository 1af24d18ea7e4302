"""Flattening and rebuilding nested structures of lists, tuples, namedtuples and dicts."""

from __future__ import annotations

__all__ = ["flatten", "pack_sequence_as", "map_structure", "assert_same_structure", "is_sequence"]


def is_sequence(x) -> bool:
    return isinstance(x, (list, tuple, dict))


def _items(x):
    if isinstance(x, dict):
        return [x[k] for k in sorted(x)]
    return list(x)


def flatten(structure) -> list:
    """The leaves of ``structure`` in a fixed order (dicts by sorted key)."""
    if not is_sequence(structure):
        return [structure]
    out = []
    for item in _items(structure):
        out.extend(flatten(item))
    return out


def _pack(structure, flat, i):
    if not is_sequence(structure):
        return flat[i], i + 1
    items = []
    for s in _items(structure):
        v, i = _pack(s, flat, i)
        items.append(v)
    if isinstance(structure, dict):
        return type(structure)(zip(sorted(structure), items)), i
    if isinstance(structure, tuple) and hasattr(structure, "_fields"):
        return type(structure)(*items), i
    return type(structure)(items), i


def pack_sequence_as(structure, flat_sequence):
    """Rebuilds ``structure`` with leaves taken in order from ``flat_sequence``."""
    flat_sequence = list(flat_sequence)
    n = len(flatten(structure))
    if n != len(flat_sequence):
        raise ValueError(
            f"Structure had {n} elements, but flat_sequence had {len(flat_sequence)} elements."
        )
    out, _ = _pack(structure, flat_sequence, 0)
    return out


def map_structure(fn, *structures):
    first = structures[0]
    for s in structures[1:]:
        assert_same_structure(first, s)
    flats = [flatten(s) for s in structures]
    return pack_sequence_as(first, [fn(*xs) for xs in zip(*flats)])


def _shape_of(x):
    if not is_sequence(x):
        return "leaf"
    kind = (
        "dict"
        if isinstance(x, dict)
        else (
            "namedtuple"
            if hasattr(x, "_fields")
            else type(x).__name__
            if isinstance(x, tuple)
            else "list"
        )
    )
    keys = sorted(x) if isinstance(x, dict) else None
    return (kind, keys, [_shape_of(v) for v in _items(x)])


def assert_same_structure(a, b, check_types: bool = False) -> None:
    """Raises ValueError when ``a`` and ``b`` do not nest the same way."""
    sa, sb = _shape_of(a), _shape_of(b)

    def strip(s):
        if s == "leaf":
            return s
        kind, keys, kids = s
        if not check_types and kind in ("list", "tuple", "namedtuple"):
            kind = "seq"
        return (kind, keys, [strip(k) for k in kids])

    if strip(sa) != strip(sb):
        raise ValueError(
            f"The two structures don't have the same nested structure.\n\n"
            f"First structure: {a!r}\n\nSecond structure: {b!r}"
        )
