"""JSON numbers to arrays: one numpy conversion for ordinary floats, exact integers kept."""

import numpy as np
import orjson
import pytest

from service.tensors import from_json_value


@pytest.mark.parametrize(
    ("text", "dtype", "values"),
    [
        (b"[1.5, -2.25, 0.0]", np.float64, [1.5, -2.25, 0.0]),
        (b"[[1, 2], [3, 4]]", np.int64, [[1, 2], [3, 4]]),
        (b"[9007199254740993, 1]", np.int64, [9007199254740993, 1]),  # 2**53 + 1, exact
        (b"[-9007199254740993, 1]", np.int64, [-9007199254740993, 1]),  # -(2**53) - 1, exact
        (b"[18446744073709551615, 0]", np.uint64, [2**64 - 1, 0]),
        (b"[9007199254740993.0, 1.0]", np.float64, [9007199254740992.0, 1.0]),  # floats stay
    ],
)
def test_json_numbers_convert_exactly(text, dtype, values):
    arr = from_json_value(orjson.loads(text), "x")
    assert arr.dtype == dtype
    assert arr.tolist() == values


def test_nan_with_huge_values_stays_float():
    arr = from_json_value([float("nan"), 2.0**60], "x")
    assert arr.dtype == np.float64 and np.isnan(arr[0]) and arr[1] == 2.0**60
