"""tf.compat: TF 1.15's helpers, and tf.compat.v1 as the engine itself."""

import datetime
import subprocess
import sys

import numpy as np
import pytest

import engine as tf


def test_v1_is_the_engine_and_imports_as_a_module():
    import engine.compat.v1 as tf1

    assert tf1 is tf and tf.compat.v1 is tf
    assert tf.compat.v1.placeholder is tf.placeholder
    # A program written for tensorflow.compat.v1, run with only its import changed.
    program = (
        "import engine.compat.v1 as tf\n"
        "tf.disable_v2_behavior()\n"
        "x = tf.placeholder(tf.float32, [None])\n"
        "with tf.Session() as s:\n"
        "    print(s.run(x * 2, {x: [1.0, 2.5]}).tolist())\n"
    )
    out = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[2.0, 5.0]"


def test_string_helpers_as_tensorflow():
    assert tf.compat.as_bytes("é") == b"\xc3\xa9"
    assert tf.compat.as_bytes(bytearray(b"ab")) == b"ab"
    assert tf.compat.as_text(b"\xc3\xa9") == "é" == tf.compat.as_str(b"\xc3\xa9")
    assert tf.compat.as_bytes("é", encoding="latin-1") == b"\xe9"
    assert tf.compat.as_str_any(3) == "3" and tf.compat.as_str_any(b"x") == "x"
    for fn in (tf.compat.as_bytes, tf.compat.as_text):
        with pytest.raises(TypeError, match="Expected binary or unicode string, got 3"):
            fn(3)
    import pathlib

    assert tf.compat.path_to_str(pathlib.Path("/a/b")) == "/a/b"
    assert tf.compat.path_to_str(7) == 7
    assert isinstance(np.int32(3), tf.compat.integral_types)
    assert isinstance(np.float16(1), tf.compat.real_types)
    assert isinstance("s", tf.compat.bytes_or_text_types)


def test_dimensions_and_forward_compatibility():
    shape = tf.TensorShape([3, None])
    assert tf.compat.dimension_value(shape[0]) == 3 and tf.compat.dimension_value(5) == 5
    assert tf.compat.dimension_at_index(shape, 1).value is None
    assert tf.compat.dimension_at_index(tf.TensorShape(None), 4).value is None
    assert tf.compat.forward_compatible(2019, 1, 1)
    today = datetime.date.today()
    with tf.compat.forward_compatibility_horizon(2018, 6, 1):
        assert not tf.compat.forward_compatible(2019, 1, 1)
        assert tf.compat.forward_compatible(2018, 5, 31)
    assert tf.compat.forward_compatible(2019, 1, 1) and today.year > 2000


def test_v2_is_out_of_scope_with_a_reason():
    with pytest.raises(AttributeError, match="tf.compat.v2 is not available.*out of scope"):
        tf.compat.v2  # noqa: B018
    with pytest.raises(AttributeError, match="no attribute 'nothing'"):
        tf.compat.nothing  # noqa: B018
