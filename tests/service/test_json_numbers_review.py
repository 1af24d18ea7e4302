"""Review of ``service.protocols.json_numbers`` (issue 13, numparse): each test reproduced one
defect of the fast JSON parse, against the orjson path (``json_numbers.ENABLED = False``), and
passes since it was fixed: keys holding U+0000, objects of many keys (quadratic lookups),
nested values outside the tensors (unbounded pysimdjson conversion), and the memory a large
body's parse held while its request ran (bodies over 4 MiB are orjson's)."""

import json
import subprocess
import sys

import numpy as np
import pytest

from service.app import create_app
from service.protocols import json_numbers
from service.protocols.common import parse_json
from tests.service.json_bodies import pad
from tests.service.test_json_numbers import _post_both, echo_model

pytestmark = pytest.mark.skipif(
    not json_numbers.ENABLED, reason="pysimdjson is not installed (the fast/test extras)"
)


@pytest.fixture(scope="module")
def echo_repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("json-numbers-review")
    echo_model(root / "echo" / "1")
    (root / "echo" / "config.json").write_text('{"warmup": false}')
    return root


# -- a key holding U+0000 -------------------------------------------------------------------
async def test_a_key_with_nul_does_not_smuggle_a_ragged_tensor(
    aiohttp_client, make_config, echo_repository
):
    # "inputs\u0000" is looked up as "inputs": its lists are counted as those of "inputs"
    # (6, the hidden [4] included), while the body holds 5 there; that makes up for the
    # list hidden in the data's last row, which the count should have caught.
    raw = pad(
        b'{"inputs": [{"name": "x", "datatype": "FP32", "shape": [4], '
        b'"data": [[1, 2], [3, [4]]]}], "inputs\\u0000": [[[[[0]]]]], '
        b'"parameters": {"signature_name": "float32"}}'
    )
    client = await aiohttp_client(create_app(make_config(model_repository=str(echo_repository))))
    (status, fast), (slow_status, slow) = await _post_both(client, "/v2/models/echo/infer", raw)
    assert slow_status == 400 and b"ragged" in slow
    assert (status, fast) == (slow_status, slow)


async def test_a_named_input_with_nul_keeps_its_own_value(
    aiohttp_client, make_config, echo_repository
):
    raw = pad(b'{"inputs": {"x": [1.5, 2.5], "x\\u0000": ["s", 1]}, "signature_name": "float32"}')
    client = await aiohttp_client(create_app(make_config(model_repository=str(echo_repository))))
    (status, fast), (slow_status, slow) = await _post_both(client, "/v1/models/echo:predict", raw)
    assert slow_status == 400 and b"mixes strings" in slow
    assert (status, fast) == (slow_status, slow)


# -- work on the event loop ------------------------------------------------------------------
# (Found as time: 20,000 keys took ~1 s where orjson takes ~12 ms, and nested values outside
# the tensors ~4x orjson's time. Checked here as what bounds that work, not as timings.)
def _many_keys(n: int) -> list[tuple[str, bytes]]:
    keys = ",".join(f'"k{i}": 0' for i in range(n))
    return [
        ("TF top level", f'{{"instances": [1.5], {keys}}}'.encode()),
        ("TF named inputs", f'{{"inputs": {{{keys}}}}}'.encode()),
        ("V2 input object", f'{{"inputs": [{{"name": "x", {keys}}}]}}'.encode()),
        ("V2 top level", f'{{"inputs": [], {keys}}}'.encode()),
    ]


def _load(name: str):
    return json_numbers.load_infer if name.startswith("V2") else json_numbers.load_predict


@pytest.mark.parametrize("which", range(4))
def test_an_object_of_many_keys_is_orjsons(which):
    """Each pysimdjson key lookup scans its object, so n keys looked up one by one cost n^2:
    an object of more than _MAX_PLAIN keys sends the body to orjson before any lookup."""
    name, raw = _many_keys(20_000)[which]
    assert _load(name)(raw) is None, name
    parse = json_numbers.parse_infer if name.startswith("V2") else json_numbers.parse_predict
    assert parse(raw) == parse_json(raw)


def _nested(leaf: str, widths: list[int]) -> str:
    text = leaf
    for width in widths:
        text = "[" + ",".join([text] * width) + "]"
    return text


def _v2_with_parameter(value: str) -> bytes:
    return pad(
        (
            '{"inputs": [{"name": "x", "datatype": "FP32", "shape": [2], "data": [1.5, 2.5]}], '
            '"parameters": {"p": ' + value + "}}"
        ).encode()
    )


def test_nested_values_outside_the_tensors_are_bounded():
    """_MAX_PLAIN bounded only a value's top level: 64 x 64 x 64 x 4 numbers in a V2
    parameter were all made into Python values by pysimdjson (then parsed again by orjson
    when a "[" in a string spoiled the count). Now every value outside the tensors, nested
    ones included, counts against one budget per body, looked at only until it is spent."""
    tally = json_numbers._Tally()
    raw = _nested("0", [64, 64, 64, 4])
    doc = json_numbers.simdjson.Parser().parse(raw.encode())
    with pytest.raises(json_numbers._DoubtError):
        tally.plain(doc)
    # it stopped within the budget (plus the one list that spent it), not after 64^3 lists
    assert tally.plain_left >= -json_numbers._MAX_PLAIN
    big = _v2_with_parameter(_nested("0", [64, 64, 64, 4]))
    assert json_numbers.load_infer(big) is None
    assert json_numbers.parse_infer(big) == parse_json(big)
    # within the budget the fast parse keeps the body, with the same values as orjson
    small = _v2_with_parameter(_nested("0", [4, 4, 4]))
    assert json_numbers.load_infer(small) is not None
    assert json_numbers.parse_infer(small)["parameters"] == parse_json(small)["parameters"]


# -- memory held while a request runs -------------------------------------------------------
_HELD = """
import gc, sys
from engine import dtypes
from engine.tensor_shape import TensorShape
from service.protocols import json_numbers, tfserving
from service.tensors import TensorSpec

def rss_mib():
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096 / 2**20

class Signature:
    key = "k"
    inputs = {"x": TensorSpec("x", "x:0", dtypes.uint8, TensorShape(None))}
    input_order = ["x"]

with open(sys.argv[2], "rb") as f:  # made by the test: no freed lists here to reuse
    raw = f.read()
gc.collect()
json_numbers.ENABLED = sys.argv[1] == "fast"
before = rss_mib()
body = json_numbers.parse_predict(raw)  # what _predict keeps while manager.infer awaits
inputs = tfserving._row_inputs(body["instances"], Signature, True)
gc.collect()
print(rss_mib() - before)
"""


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/statm")
def test_a_parsed_body_holds_no_more_memory_than_orjsons_while_it_runs(tmp_path):
    pixels = np.random.default_rng(0).integers(0, 256, size=(300, 9408)).tolist()
    body = tmp_path / "image.json"  # a uint8 image batch as TF Serving clients send it
    body.write_bytes(json.dumps({"instances": pixels, "signature_name": "uint8"}).encode())
    held = {}
    for mode in ("fast", "slow"):
        out = subprocess.run(
            [sys.executable, "-c", _HELD, mode, str(body)],
            capture_output=True,
            text=True,
            timeout=300,
            check=True,
        )
        held[mode] = float(out.stdout.split()[-1])
    assert held["fast"] < 1.5 * held["slow"] + 8, held
