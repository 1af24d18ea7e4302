"""``tf.keras.applications`` against TF1's Keras (``make_keras_applications_fixtures.py``):
each architecture has TF's layers (names, classes, order, output shapes, parameter counts),
predicts as TF's with the same seeded weights, loads a weight file TF saved (given as a path
or as 'imagenet' from Keras' cache), and refuses bad arguments as Keras does; and
``preprocess_input`` / ``decode_predictions``."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

import engine as tf
from engine.keras.applications import imagenet_utils
from tests.engine.fixtures import keras_app_cases as cases
from tests.engine.fixtures.oracle import FIXTURES

try:
    import h5py
except ImportError:
    h5py = None

A = tf.keras.applications
DIR = FIXTURES / "keras_applications"
TF = np.load(DIR / "keras_applications_tf.npz")
META = json.loads((DIR / "structure.json").read_text())
needs_h5py = pytest.mark.skipif(
    h5py is None, reason="h5py is not installed: pip install flowserve[keras]"
)


@pytest.fixture(autouse=True)
def _fresh_session():
    tf.keras.backend.clear_session()
    yield
    tf.keras.backend.clear_session()


def _build(name: str, **overrides):
    app, kwargs = cases.CASES[name]
    return getattr(A, app)(**{"weights": None, **kwargs, **overrides})


def _assert_predictions(model, name: str) -> None:
    got = model.predict(cases.inputs(name))
    want = TF[f"{name}/predictions"]
    scale = float(np.abs(want).max())
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("name", sorted(cases.CASES))
def test_structure_and_predictions_match_tf(name):
    model = _build(name)
    want = META["models"][name]
    assert model.name == want["model_name"]
    got = json.loads(json.dumps(cases.structure(model)))
    assert [row[0] for row in got] == [row[0] for row in want["layers"]]
    assert got == want["layers"]
    assert model.count_params() == want["count_params"]
    cases.set_weights(model, tf.keras.backend)
    _assert_predictions(model, name)


def test_functional_models_list_layers_as_keras_does():
    assert [layer.name for layer in cases.branched_model(tf).layers] == META["branched_layers"]


@needs_h5py
def test_weights_file_from_tf_loads_by_path_and_by_name():
    name = cases.SAVED[0]
    path = str(DIR / f"{name}.h5")
    _assert_predictions(_build(name, weights=path), name)
    tf.keras.backend.clear_session()
    model = _build(name)
    model.load_weights(path, by_name=True)
    _assert_predictions(model, name)


@needs_h5py
def test_imagenet_weights_come_from_keras_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    name = "mobilenet_025_notop"
    # non-square or unlisted sizes load the 224-pixel weights, as Keras does
    file = "mobilenet_2_5_224_tf_no_top.h5"
    with pytest.raises(FileNotFoundError, match=file) as info:
        _build(name, weights="imagenet")
    assert str(tmp_path / "models") in str(info.value)
    (tmp_path / "models").mkdir()
    shutil.copy(DIR / f"{name}.h5", tmp_path / "models" / file)
    tf.keras.backend.clear_session()
    _assert_predictions(_build(name, weights="imagenet"), name)


@pytest.mark.parametrize(
    ("app", "file", "kwargs"),
    [
        ("VGG16", "vgg16_weights_tf_dim_ordering_tf_kernels.h5", {}),
        ("VGG19", "vgg19_weights_tf_dim_ordering_tf_kernels_notop.h5", {"include_top": False}),
        (
            "ResNet50",
            "resnet50_weights_tf_dim_ordering_tf_kernels_notop.h5",
            {"include_top": False},
        ),
        ("MobileNet", "mobilenet_5_0_160_tf.h5", {"alpha": 0.5, "input_shape": (160, 160, 3)}),
        (
            "DenseNet121",
            "densenet121_weights_tf_dim_ordering_tf_kernels_notop.h5",
            {"include_top": False},
        ),
        ("InceptionV3", "inception_v3_weights_tf_dim_ordering_tf_kernels.h5", {}),
        (
            "Xception",
            "xception_weights_tf_dim_ordering_tf_kernels_notop.h5",
            {"include_top": False},
        ),
        ("NASNetMobile", "nasnet_mobile.h5", {}),
        (
            "MobileNetV2",
            "mobilenet_v2_weights_tf_dim_ordering_tf_kernels_0.35_96_no_top.h5",
            {"alpha": 0.35, "input_shape": (96, 96, 3), "include_top": False},
        ),
        ("ResNet50V2", "resnet50v2_weights_tf_dim_ordering_tf_kernels.h5", {}),
        (
            "ResNet101V2",
            "resnet101v2_weights_tf_dim_ordering_tf_kernels_notop.h5",
            {"include_top": False, "input_shape": (32, 32, 3)},
        ),
        (
            "InceptionResNetV2",
            "inception_resnet_v2_weights_tf_dim_ordering_tf_kernels_notop.h5",
            {"include_top": False, "input_shape": (75, 75, 3)},
        ),
    ],
)
def test_missing_imagenet_file_is_named(tmp_path, monkeypatch, app, file, kwargs):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match=file):
        getattr(A, app)(weights="imagenet", **kwargs)


@pytest.mark.parametrize(
    ("app", "kwargs", "match"),
    [
        ("VGG16", {"weights": "nowhere.h5"}, "`weights` argument should be"),
        ("ResNet50", {"weights": "imagenet", "classes": 10}, "`classes` should be 1000"),
        (
            "VGG16",
            {"weights": None, "include_top": False, "input_shape": (16, 16, 3)},
            "at least 32x32",
        ),
        (
            "VGG19",
            {"weights": None, "include_top": False, "input_shape": (32, 32)},
            "three integers",
        ),
        (
            "ResNet50",
            {"weights": "imagenet", "input_shape": (64, 64, 3)},
            r"should be \(224, 224, 3\)",
        ),
        (
            "ResNet50",
            {"weights": "imagenet", "include_top": False, "input_shape": (64, 64, 1)},
            "3 channels",
        ),
        ("VGG16", {"weights": None, "input_shape": (None, None, 3)}, "static `input_shape`"),
        ("MobileNet", {"weights": "imagenet", "alpha": 0.3}, "alpha can be one of"),
        ("MobileNet", {"weights": "imagenet", "depth_multiplier": 2}, "depth multiplier must be 1"),
        ("MobileNetV2", {"weights": "imagenet", "alpha": 0.6}, "alpha must be one of"),
        ("MobileNetV2", {"weights": None, "blocks": 3}, "Unknown argument"),
        (
            "VGG16",
            {"weights": "imagenet", "classifier_activation": "relu"},
            "activations are allowed",
        ),
    ],
)
def test_bad_arguments_are_refused(tmp_path, monkeypatch, app, kwargs, match):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))  # the checks come before any file
    with pytest.raises(ValueError, match=match):
        getattr(A, app)(**kwargs)


def test_input_tensor_becomes_the_model_input():
    x = tf.keras.Input((32, 32, 3))
    model = A.MobileNet(alpha=0.25, include_top=False, weights=None, input_tensor=x)
    assert model.inputs[0] is x
    tf.keras.backend.clear_session()
    placeholder = tf.placeholder(tf.float32, (None, 32, 32, 3))
    model = A.ResNet50(include_top=False, weights=None, input_tensor=placeholder, pooling="avg")
    assert model.inputs[0] is placeholder
    assert model.output_shape == (None, 2048)


def test_nasnet_and_inception_arguments_are_checked():
    with pytest.raises(ValueError, match="multiple of 24"):
        A.nasnet.NASNet(penultimate_filters=100, weights=None)
    with pytest.raises(ValueError, match="at least 75x75"):
        A.InceptionV3(weights=None, include_top=False, input_shape=(64, 64, 3))
    with pytest.raises(ValueError, match="at least 71x71"):
        A.Xception(weights=None, include_top=False, input_shape=(70, 80, 3))
    with pytest.raises(ValueError, match="at least 75x75"):
        A.InceptionResNetV2(weights=None, include_top=False, input_shape=(74, 80, 3))
    with pytest.raises(ValueError, match="Unknown argument"):
        A.InceptionResNetV2(weights=None, blocks=3)
    with pytest.raises(ValueError, match="Unknown Inception-ResNet block type"):
        A.inception_resnet_v2.inception_resnet_block(tf.keras.Input((8, 8, 32)), 0.1, "block9", 1)
    with pytest.raises(ValueError, match="at least 32x32"):
        A.ResNet152V2(weights=None, include_top=False, input_shape=(31, 32, 3))


def test_unknown_keyword_is_a_type_error_where_keras_has_no_kwargs():
    with pytest.raises(TypeError):
        A.VGG16(weights=None, alpha=1.0)


# -- preprocess_input ----------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "fmt", "shape"), cases.PREPROCESS)
def test_preprocess_input_matches_tf(mode, fmt, shape):
    key = f"preprocess/{mode}/{fmt}/{len(shape)}d"
    x = cases.preprocess_image(shape)
    got = imagenet_utils.preprocess_input(x, data_format=fmt, mode=mode)
    np.testing.assert_allclose(got, TF[key], rtol=1e-6, atol=1e-5)
    if key + "/symbolic" in TF:
        with tf.Graph().as_default(), tf.Session() as sess:
            out = imagenet_utils.preprocess_input(
                tf.constant(cases.preprocess_image(shape)), data_format=fmt, mode=mode
            )
            np.testing.assert_allclose(sess.run(out), TF[key + "/symbolic"], rtol=1e-6, atol=1e-5)


def test_family_preprocess_modes_and_in_place_update():
    x = cases.preprocess_image((1, 2, 2, 3))
    np.testing.assert_allclose(A.mobilenet.preprocess_input(x.copy()), x / 127.5 - 1.0, rtol=1e-6)
    for family in (A.resnet_v2, A.inception_resnet_v2):
        np.testing.assert_allclose(family.preprocess_input(x.copy()), x / 127.5 - 1.0, rtol=1e-6)
    np.testing.assert_allclose(
        A.resnet50.preprocess_input(x.copy()), x[..., ::-1] - [103.939, 116.779, 123.68], rtol=1e-6
    )
    y = x.copy()
    A.vgg16.preprocess_input(y)  # Keras writes over float inputs
    assert not np.array_equal(y, x)
    ints = x.astype(np.uint8)
    out = A.mobilenet_v2.preprocess_input(ints)
    assert out.dtype == np.float32 and ints.dtype == np.uint8


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"mode": "keras"}, "mode to be one of"), ({"data_format": "NHWC"}, "data_format")],
)
def test_preprocess_input_refuses_unknown_mode_and_format(kwargs, match):
    with pytest.raises(ValueError, match=match):
        imagenet_utils.preprocess_input(np.zeros((1, 2, 2, 3), np.float32), **kwargs)


# -- decode_predictions --------------------------------------------------------------------


def _class_index(tmp_path, monkeypatch, index) -> None:
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    (tmp_path / "models").mkdir(exist_ok=True)
    text = index if isinstance(index, str) else json.dumps(index)
    (tmp_path / "models" / "imagenet_class_index.json").write_text(text)


def test_decode_predictions_reads_keras_class_index(tmp_path, monkeypatch):
    _class_index(tmp_path, monkeypatch, {str(i): [f"n{i:08d}", f"class{i}"] for i in range(1000)})
    preds = np.random.RandomState(0).rand(2, 1000).astype(np.float32)
    got = A.resnet50.decode_predictions(preds, top=3)
    for row, pred in zip(got, preds, strict=True):
        best = np.argsort(pred)[::-1][:3]
        assert [r[:2] for r in row] == [(f"n{i:08d}", f"class{i}") for i in best]
        np.testing.assert_array_equal([r[2] for r in row], pred[best])


def test_decode_predictions_errors(tmp_path, monkeypatch):
    monkeypatch.setenv("KERAS_HOME", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="imagenet_class_index.json"):
        A.imagenet_utils.decode_predictions(np.zeros((1, 1000)))
    with pytest.raises(ValueError, match=r"\(samples, 1000\)"):
        A.imagenet_utils.decode_predictions(np.zeros((1, 10)))
    for bad, match in [
        ("{not json", "not JSON"),
        ({"0": ["n0", "tench"]}, "keys '0' to '999'"),
        ({str(i): ["n0"] for i in range(1000)}, r"\[wordnet_id, name\]"),
        ("[" + " " * (1 << 20) + "]", "larger than"),
    ]:
        _class_index(tmp_path, monkeypatch, bad)
        with pytest.raises(ValueError, match=match):
            A.imagenet_utils.decode_predictions(np.zeros((1, 1000)))


def test_inception_resnet_scale_layer_rebuilds_from_config():
    from engine.keras.applications.inception_resnet_v2 import CustomScaleLayer  # noqa: PLC0415

    tf.keras.backend.clear_session()
    a, b = tf.keras.Input((3,)), tf.keras.Input((3,))
    model = tf.keras.Model([a, b], CustomScaleLayer(0.17)([a, b]))
    rebuilt = tf.keras.models.model_from_json(model.to_json())
    layer = rebuilt.layers[-1]
    assert type(layer) is CustomScaleLayer and layer.scale == 0.17
    x = np.ones((2, 3), np.float32)
    np.testing.assert_allclose(rebuilt.predict([x, 2 * x]), x + 0.34, rtol=1e-6)
