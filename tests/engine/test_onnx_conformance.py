"""The ONNX backend cases in the committed passing list keep passing (the list only grows).

Run ``python -m tests.engine.onnx_conformance`` for the full pass/fail report.
"""

import pytest

from tests.engine import onnx_conformance as conf

pytest.importorskip("onnx", reason="the backend cases come from the onnx wheel (test extra)")

PASSING = conf.passing_list()


@pytest.fixture(scope="module")
def cases():
    return conf.case_dirs()


def test_the_passing_list_is_sorted_and_unique():
    assert PASSING == sorted(set(PASSING))
    assert len(PASSING) > 700


@pytest.mark.parametrize("name", PASSING)
def test_backend_case(name, cases):
    if name not in cases:
        pytest.skip(f"{name} is not in onnx {conf.onnx_version()}'s cases")
    conf.run_case(cases[name])
