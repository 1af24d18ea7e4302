"""Hypothesis strategies for request bodies of both protocols, and the checks every answer
must pass. Used by ``test_fuzz_protocols.py`` (CI, a modest example count) and by
``python -m tests.service.fuzz_bodies URL N`` (counts failing cases against any server, e.g.
an older build, without stopping at the first).

Every case posts to the echo model of ``tests/service/hostile.py`` (one identity signature
per datatype). The checks: never a 5xx; every error is JSON ``{"error": str}``; a 200 answer
to a V2 JSON request whose datatype matches its signature's returns the numbers it was sent,
exactly.
"""

from __future__ import annotations

import http.client
import json
import math
import struct
import sys
from urllib.parse import urlsplit

import msgpack
from hypothesis import strategies as st

from tests.service.hostile import ECHO_DTYPES

DATATYPES = list(ECHO_DTYPES) + ["INT8", "UINT16", "FP16", "BF16", "int64", "", None, 3]
SIGNATURES = [None, "serving_default", *ECHO_DTYPES, "nope", 7]
V1_DTYPES = ["int64", "uint64", "float32", "float64", "bool", "string", "int8", "bogus", None]

# Integers around every boundary that matters, and far beyond 64 bits.
edges = [0, 1, -1, 2**7, 2**8, 2**15, 2**16, 2**31, 2**32, 2**53, 2**63, 2**64, 10**30]
integers = st.one_of(
    st.sampled_from([s * e + d for e in edges for s in (1, -1) for d in (-1, 0, 1)]),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.integers(),
)
floats = st.floats(allow_nan=True, allow_infinity=True)
leaves = st.one_of(integers, floats, st.booleans(), st.text(max_size=5), st.none())
flat_lists = st.one_of(
    st.lists(integers, max_size=6),
    st.lists(floats, max_size=6),
    st.lists(st.booleans(), max_size=6),
    st.lists(st.text(max_size=4), max_size=6),
    st.lists(leaves, max_size=6),
)
values = st.recursive(leaves | flat_lists, lambda inner: st.lists(inner, max_size=3), max_leaves=12)
dims = st.one_of(st.integers(0, 4), st.sampled_from([2**31, 2**62, 2**63, 2**64, -1]), integers)
shapes = st.one_of(st.lists(dims, max_size=4), values)
param_values = st.one_of(leaves, st.dictionaries(st.text(max_size=4), leaves, max_size=2))
parameters = st.one_of(
    st.none(),
    st.fixed_dictionaries(
        {},
        optional={
            "signature_name": st.sampled_from(SIGNATURES),
            "timeout": param_values,
            "binary_data_output": param_values,
        },
    ),
    values,
)


@st.composite
def v2_input(draw, binary_data=False):
    item = {
        "name": draw(st.sampled_from(["x", "x", "y", "", 5])),
        "datatype": draw(st.sampled_from(DATATYPES)),
        "shape": draw(shapes),
    }
    if binary_data:
        item["parameters"] = {"binary_data_size": draw(st.one_of(st.integers(-2, 40), leaves))}
    else:
        item["data"] = draw(values)
    return item


@st.composite
def v2_matching(draw):
    """A well-formed request whose datatype matches its signature: must round-trip."""
    datatype = draw(st.sampled_from(["INT64", "UINT64", "INT32", "UINT8", "FP64", "BOOL"]))
    lo, hi = {
        "INT64": (-(2**63), 2**63 - 1),
        "UINT64": (0, 2**64 - 1),
        "INT32": (-(2**31), 2**31 - 1),
        "UINT8": (0, 255),
    }.get(datatype, (None, None))
    if datatype == "FP64":
        element = st.floats(allow_nan=False, allow_infinity=False)
    elif datatype == "BOOL":
        element = st.booleans()
    else:
        element = st.one_of(
            st.integers(lo, hi),
            st.sampled_from([lo, hi, lo + 1, hi - 1, 0, 2**53 + 1 if hi > 2**53 else 1]),
        )
    data = draw(st.lists(element, max_size=8))
    doc = {
        "inputs": [{"name": "x", "datatype": datatype, "shape": [len(data)], "data": data}],
        "parameters": {"signature_name": "serving_default" if datatype == "INT64" else datatype},
    }
    return doc


v2_docs = st.one_of(
    st.fixed_dictionaries(
        {"inputs": st.one_of(st.lists(v2_input(), max_size=2), values)},
        optional={"parameters": parameters, "id": leaves, "outputs": values},
    ),
    v2_matching(),
)


@st.composite
def v2_json_case(draw):
    doc = draw(v2_docs)
    return "/v2/models/echo/infer", json.dumps(doc).encode(), {"Content-Type": "application/json"}


@st.composite
def v2_binary_case(draw):
    doc = {"inputs": draw(st.lists(v2_input(binary_data=True), min_size=1, max_size=2))}
    if draw(st.booleans()):
        doc["parameters"] = {"signature_name": draw(st.sampled_from(SIGNATURES))}
    header = json.dumps(doc).encode()
    tail = draw(st.binary(max_size=40))
    if draw(st.booleans()):  # well-formed BYTES elements, sometimes
        tail = b"".join(
            struct.pack("<I", len(b)) + b for b in draw(st.lists(st.binary(max_size=4), max_size=3))
        )
    length = draw(st.one_of(st.just(str(len(header))), st.sampled_from(["-1", "x", "99999", ""])))
    return (
        "/v2/models/echo/infer",
        header + tail,
        {"Inference-Header-Content-Length": length, "Content-Type": "application/octet-stream"},
    )


@st.composite
def v2_msgpack_case(draw):
    doc = draw(v2_docs)
    if isinstance(doc.get("inputs"), list):
        for item in doc["inputs"]:
            if isinstance(item, dict) and draw(st.booleans()):
                item["data"] = draw(st.binary(max_size=24))
    try:
        body = msgpack.packb(doc, use_bin_type=True)
    except (OverflowError, TypeError, ValueError):
        body = draw(st.binary(max_size=64))
    return "/v2/models/echo/infer", body, {"Content-Type": "application/msgpack"}


@st.composite
def v1_json_case(draw):
    doc = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "instances": values,
                "inputs": st.one_of(values, st.dictionaries(st.sampled_from(["x", "y"]), values)),
                "signature_name": st.sampled_from(SIGNATURES),
                "timeout": param_values,
            },
        )
    )
    return "/v1/models/echo:predict", json.dumps(doc).encode(), {"Content-Type": "application/json"}


@st.composite
def v1_msgpack_case(draw):
    tensor = draw(
        st.fixed_dictionaries(
            {
                "dtype": st.sampled_from(V1_DTYPES),
                "shape": shapes,
                "data": st.one_of(
                    st.binary(max_size=24), st.lists(st.binary(max_size=3), max_size=3), leaves
                ),
            }
        )
    )
    doc = {"inputs": tensor if draw(st.booleans()) else {"x": tensor}}
    if draw(st.booleans()):
        doc["signature_name"] = draw(st.sampled_from(SIGNATURES))
    try:
        body = msgpack.packb(doc, use_bin_type=True)
    except (OverflowError, TypeError, ValueError):
        body = draw(st.binary(max_size=64))
    return "/v1/models/echo:predict", body, {"Content-Type": "application/msgpack"}


raw_case = st.tuples(
    st.sampled_from(["/v2/models/echo/infer", "/v1/models/echo:predict"]),
    st.binary(max_size=80),
    st.sampled_from(
        [
            {},
            {"Content-Type": "application/msgpack"},
            {"Content-Encoding": "gzip"},
            {"Content-Encoding": "deflate"},
            {"Content-Encoding": "br"},
        ]
    ),
)

CASES = {
    "v2_json": v2_json_case(),
    "v2_binary": v2_binary_case(),
    "v2_msgpack": v2_msgpack_case(),
    "v1_json": v1_json_case(),
    "v1_msgpack": v1_msgpack_case(),
    "raw": raw_case,
}


def post(base: str, path: str, body: bytes, headers: dict) -> tuple[int, dict, bytes]:
    url = urlsplit(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    try:
        conn.request("POST", path, body=body, headers=headers)
        r = conn.getresponse()
        return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
    finally:
        conn.close()


def problems(path: str, body: bytes, headers: dict, status: int, rbody: bytes):
    """What is wrong with the answer (an empty list: nothing)."""
    found = []
    if status >= 500 and not (status == 504 and _asks_for_a_deadline(body, headers)):
        found.append(f"status {status}")
    if status >= 400:
        try:
            doc = json.loads(rbody)
            if not (isinstance(doc, dict) and isinstance(doc.get("error"), str)):
                found.append("error body is not {'error': str}")
        except ValueError:
            found.append(f"error body is not JSON: {rbody[:80]!r}")
        return found
    if (
        status == 200
        and headers.get("Content-Type") == "application/json"
        and path.startswith("/v2")
    ):
        found.extend(_round_trip(body, rbody))
    return found


def _asks_for_a_deadline(body: bytes, headers: dict) -> bool:
    """Whether the request set a positive numeric ``timeout`` (in the body or its
    ``parameters``): a 504 "deadline exceeded" is then the answer it asked for, not a server
    fault (e.g. ``"timeout": 3.26e-151`` expires before the model runs)."""
    try:
        if headers.get("Content-Type") == "application/msgpack":
            doc = msgpack.unpackb(body, raw=False, strict_map_key=False)
        else:
            doc = json.loads(body)
    except Exception:  # noqa: BLE001 - not a document: it set no deadline
        return False
    if not isinstance(doc, dict):
        return False
    params = doc.get("parameters") if isinstance(doc.get("parameters"), dict) else {}
    return any(
        isinstance(t, (int, float)) and not isinstance(t, bool) and t > 0
        for t in (doc.get("timeout"), params.get("timeout"))
    )


def _round_trip(body: bytes, rbody: bytes) -> list[str]:
    doc = json.loads(body)
    inputs = doc.get("inputs")
    params = doc.get("parameters") if isinstance(doc.get("parameters"), dict) else {}
    if not (isinstance(inputs, list) and len(inputs) == 1 and isinstance(inputs[0], dict)):
        return []
    item = inputs[0]
    datatype = item.get("datatype")
    signature = params.get("signature_name") or "serving_default"
    expected_sig = "serving_default" if datatype == "INT64" else datatype
    if signature != expected_sig or datatype not in (
        "INT64",
        "UINT64",
        "INT32",
        "UINT8",
        "FP64",
        "BOOL",
    ):
        return []
    sent = _flatten(item.get("data"))
    if not all(isinstance(v, (int, float)) for v in sent):
        return []
    try:
        got = json.loads(rbody)["outputs"][0]["data"]
    except (ValueError, KeyError, IndexError, TypeError):
        return ["200 answer without outputs[0].data"]
    if len(got) != len(sent) or any(not _same(a, b) for a, b in zip(sent, got)):
        return [f"{datatype} values changed: sent {sent[:4]}, got {got[:4]}"]
    return []


def _same(a, b) -> bool:
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    return a == b and (isinstance(a, bool) == isinstance(b, bool) or isinstance(a, float))


def _flatten(v):
    if isinstance(v, list):
        return [x for item in v for x in _flatten(item)]
    return [v]


def check_case(base: str, case) -> list[str]:
    """Posts one case; what is wrong with the answer."""
    path, body, headers = case
    try:
        status, _, rbody = post(base, path, body, headers)
    except (OSError, http.client.HTTPException) as e:
        return [f"no answer: {e}"]
    return problems(path, body, headers, status, rbody)


def failing_cases(base: str, strategy, n: int) -> list[str]:
    """The first problem of every failing case among ``n`` generated (no stopping)."""
    from hypothesis import HealthCheck, Phase, given, settings

    failed: list[str] = []

    @settings(
        max_examples=n,
        phases=[Phase.generate],
        database=None,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
    )
    @given(strategy)
    def run(case):
        found = check_case(base, case)
        if found:
            failed.append(found[0])

    run()
    return failed


def count_failures(base: str, n: int) -> dict[str, int]:
    """Runs ``n`` cases of each kind against ``base``: failing cases per kind."""
    counts = {}
    for kind, strategy in CASES.items():
        failed = failing_cases(base, strategy, n)
        counts[kind] = len(failed)
        if failed:
            print(kind, len(failed), "e.g.", sorted(set(failed))[:3], file=sys.stderr)
    return counts


if __name__ == "__main__":
    print(count_failures(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 100))
