"""Random JSON request bodies written token by token, for the parity tests of
``service.protocols.json_numbers``: mostly the hot shapes (rectangular lists of numbers, as
TF Serving's ``instances``/``inputs`` and V2's ``data``), with every kind of number text and
the irregularities the fast parse must hand back (ragged rows, a list hidden among numbers,
bools, nulls, strings, objects, numbers beyond 64 bits or float64, duplicate keys, a ``[``
in a string, a byte order mark, whitespace anywhere)."""

from __future__ import annotations

import json
import random

from service.protocols import json_numbers

# Number texts orjson and simdjson might read differently, or that need the exact path.
SPECIAL_NUMBERS = [
    "0",
    "-0",
    "-0.0",
    "0.0",
    "1",
    "-1",
    "1.0",
    "1e5",
    "1E+2",
    "-2.5e-3",
    "1e-400",  # underflows to 0.0
    "2.5e-324",
    "4.9406564584124654e-324",
    "1.7976931348623157e308",
    "1e400",  # beyond float64: orjson refuses, the standard parser reads inf
    "-1e400",
    "9007199254740992",  # 2**53
    "9007199254740993",
    "-9007199254740993",
    "9007199254740993.0",
    "16777217",  # 2**24 + 1: float32 rounds it
    "3.4028235e38",
    "3.5e38",  # beyond float32
    "65504",
    "65520",  # beyond float16
    "9223372036854775807",
    "9223372036854775808",  # 2**63: uint64 only
    "-9223372036854775808",
    "-9223372036854775809",
    "18446744073709551615",
    "18446744073709551616",  # 2**64
    "123456789012345678901234567890",
    "0.1000000000000000055511151231257827021181583404541015625",
    "2.2250738585072011e-308",
    "255",
    "256",
    "-129",
    "4294967296",
]
DATATYPES = ["FP32", "FP64", "INT32", "INT64", "UINT8", "UINT64", "FP16", "BOOL", "BYTES"]
SIGNATURES = ["float32", "float64", "int32", "int64", "uint8", "float16", "bool", "string"]


def number(rng: random.Random) -> str:
    """The text of one JSON number (sometimes one orjson or simdjson refuses)."""
    kind = rng.random()
    if kind < 0.45:
        return repr(rng.uniform(-10, 10))
    if kind < 0.6:
        return str(rng.randint(-300, 300))
    if kind < 0.7:
        return repr(float(f"{rng.uniform(-1, 1):.7g}"))  # float32-style short text
    if kind < 0.8:
        mantissa = rng.uniform(-10, 10)
        return f"{mantissa:.{rng.randint(0, 20)}{rng.choice('eE')}}"
    if kind < 0.97:
        return repr(rng.uniform(-1e300, 1e300) * rng.choice([1, 1e-300, 1e-10, 1e-30]))
    return rng.choice(SPECIAL_NUMBERS)


def leaf(rng: random.Random) -> str:
    """A number, mostly; sometimes a value the fast parse must refuse to copy."""
    if rng.random() < 0.995:
        return number(rng)
    return rng.choice(
        ["true", "false", "null", '"x"', '"["', '{"b64": "AA=="}', "[]", "[1.5]", '"true"']
    )


def _space(rng: random.Random) -> str:
    return rng.choice(["", "", "", " ", "\n", "\t ", "\r\n  "])


def _join(rng: random.Random, items: list[str], open_: str, close: str) -> str:
    sep = "," + _space(rng) if rng.random() < 0.9 else ", "
    return open_ + _space(rng) + sep.join(items) + _space(rng) + close


def tensor(rng: random.Random, width_min: int = 1) -> str:
    """A list of numbers of one to three levels, usually rectangular."""
    rank = rng.choice([1, 1, 2, 2, 2, 3])
    shape = [rng.randint(1, 3) for _ in range(rank - 1)]
    widths = [width_min, rng.randint(width_min, 12), rng.randint(8, 40), rng.randint(8, 40)]
    shape.append(rng.choice(widths))
    bad = rng.random()

    def row(n: int) -> str:
        if bad < 0.05 and rng.random() < 0.5:
            n += rng.choice([-1, 1])  # ragged
        items = [leaf(rng) for _ in range(n)]
        if 0.12 <= bad < 0.17 and items and rng.random() < 0.5:
            items[rng.randrange(len(items))] = f"[{number(rng)}]"  # a hidden list
        return _join(rng, items, "[", "]")

    def level(dims: list[int]) -> str:
        if len(dims) == 1:
            return row(dims[0])
        if len(dims) == 2 and 0.05 <= bad < 0.12:
            # ragged rows of the right total: after the first, one a number longer, another
            # one shorter
            lengths = [dims[1]] * max(dims[0], 3)
            lengths[1] += 1
            lengths[2] -= 1
            return _join(rng, [row(n) for n in lengths], "[", "]")
        return _join(rng, [level(dims[1:]) for _ in range(dims[0])], "[", "]")

    text = level(shape)
    if bad > 0.98:
        text = rng.choice(["[]", "[[]]", "[[], []]", "[[1.5], 2.5]", "[1.5, [2.5]]", "5", '"s"'])
    return text


def _obj(rng: random.Random, pairs: list[tuple[str, str]]) -> str:
    rng.shuffle(pairs)
    if pairs and rng.random() < 0.03:
        pairs.append(rng.choice(pairs))  # a duplicate key (orjson keeps the last)
    items = [json.dumps(k) + _space(rng) + ":" + _space(rng) + v for k, v in pairs]
    return _join(rng, items, "{", "}")


def _extras(rng: random.Random) -> list[tuple[str, str]]:
    pairs = []
    if rng.random() < 0.05:
        pairs.append(("unknown", number(rng)))
    if rng.random() < 0.03:
        pairs.append(("note", '"a [bracket"'))
    return pairs


def predict_body(rng: random.Random) -> bytes:
    """A TF Serving predict body for the echo model of the parity tests."""
    pairs = []
    form = rng.random()
    if form < 0.5:
        pairs.append(("instances", tensor(rng)))
    elif form < 0.8:
        pairs.append(("inputs", tensor(rng)))
    elif form < 0.95:
        pairs.append(("inputs", _obj(rng, [("x", tensor(rng))])))
    else:
        pairs.append(("instances", _join(rng, [_obj(rng, [("x", tensor(rng))])], "[", "]")))
    if rng.random() < 0.8:
        pairs.append(("signature_name", json.dumps(rng.choice(SIGNATURES))))
    if rng.random() < 0.1:
        pairs.append(("timeout", rng.choice(["30", "1e400", "-0", "true", '"5"', "2.5"])))
    return _body(rng, _obj(rng, pairs + _extras(rng)))


def infer_body(rng: random.Random) -> bytes:
    """A KServe V2 inference request for the echo model of the parity tests."""
    data = tensor(rng)
    shape = _guess_shape(data) if rng.random() < 0.85 else [rng.randint(0, 40)]
    if shape is not None and rng.random() < 0.5:
        shape = [_count(shape)]  # V2 data is flat or nested
    item = [
        ("name", '"x"'),
        ("datatype", json.dumps(rng.choice(DATATYPES))),
        ("shape", json.dumps(shape if shape is not None else [1])),
        ("data", data),
    ]
    if rng.random() < 0.1:
        item.append(("parameters", '{"note": 1}'))
    datatype = json.loads(dict(item)["datatype"])
    signature = {"FP32": "float32", "FP64": "float64", "INT32": "int32", "INT64": "int64"}.get(
        datatype, rng.choice(SIGNATURES)
    )
    pairs = [("inputs", _join(rng, [_obj(rng, item)], "[", "]"))]
    if rng.random() < 0.9:
        pairs.append(("parameters", _obj(rng, [("signature_name", json.dumps(signature))])))
    if rng.random() < 0.3:
        pairs.append(("id", json.dumps(rng.choice(["r-1", "", "x[1]"]))))
    if rng.random() < 0.1:
        pairs.append(("outputs", '[{"name": "y"}]'))
    return _body(rng, _obj(rng, pairs + _extras(rng)))


def _body(rng: random.Random, text: str) -> bytes:
    raw = (_space(rng) + text + _space(rng)).encode()
    if rng.random() < 0.9:
        raw = pad(raw)
    if rng.random() < 0.01:
        raw = b"\xef\xbb\xbf" + raw
    return raw


def pad(raw: bytes) -> bytes:
    """``raw`` with trailing whitespace up to the size below which the fast parse leaves
    bodies to orjson."""
    return raw + b" " * max(0, json_numbers._MIN_BODY - len(raw))


def _guess_shape(text: str) -> list[int] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    shape = []
    while isinstance(value, list):
        shape.append(len(value))
        if not value:
            break
        value = value[0]
    return shape


def _count(shape: list[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n
