"""Keras model files: configs (``get_config``/``to_json``/``model_from_json``/``clone_model``)
and HDF5 models and weights, against files TF's legacy Keras wrote
(``tests/engine/fixtures/make_keras_h5_fixtures.py``): the engine loads them, predicts and
evaluates as TF recorded, saves them back in the same layout, and refuses what it must
(Lambda layers, unknown classes, corrupt files, mismatched weights)."""

from __future__ import annotations

import json
import shutil
import zipfile

import numpy as np
import pytest

import engine as tf
from engine.keras import hdf5_weights, model_config
from tests.engine.fixtures.make_keras_h5_fixtures import inputs
from tests.engine.fixtures.oracle import FIXTURES

try:
    import h5py
except ImportError:
    h5py = None

L = tf.keras.layers
DIR = FIXTURES / "keras_h5"
TF = np.load(DIR / "keras_h5_tf.npz")
MODELS = ["mlp", "two_input", "conv", "lstm"]
TF_LAYER_CONFIGS = json.loads(str(TF["layer_configs"]))
needs_h5py = pytest.mark.skipif(
    h5py is None, reason="h5py is not installed: pip install flowserve[keras]"
)


@pytest.fixture(autouse=True)
def _fresh_session():
    tf.keras.backend.clear_session()
    yield
    tf.keras.backend.clear_session()


def _normalized(config):
    """A config with dtypes left out (TF writes None before a layer is built) and floats
    rounded (TF writes float32 values widened to float64)."""
    if isinstance(config, dict):
        return {k: _normalized(v) for k, v in config.items() if k != "dtype"}
    if isinstance(config, list):
        return [_normalized(v) for v in config]
    if isinstance(config, float):
        return round(config, 6)
    return config


def _predict(model, name):
    x, _ = inputs(name)
    return model.predict(x, batch_size=8)


# -- layer configs -------------------------------------------------------------------------


@pytest.mark.parametrize("class_name", sorted(TF_LAYER_CONFIGS))
def test_layer_config_round_trips_what_tf_writes(class_name):
    spec = TF_LAYER_CONFIGS[class_name]
    layer = model_config.deserialize_layer(spec)
    assert type(layer).__name__ == class_name
    got = model_config.serialize_layer(layer)
    assert _normalized(got) == _normalized(spec)
    json.dumps(got)  # JSON-ready
    again = type(layer).from_config(layer.get_config())
    assert _normalized(model_config.serialize_layer(again)) == _normalized(spec)


ENGINE_LAYERS = [
    lambda: L.CuDNNLSTM(3, return_sequences=True, unit_forget_bias=False),
    lambda: L.CuDNNGRU(2, go_backwards=True),
    lambda: L.Conv3D(2, 3, kernel_regularizer=tf.keras.regularizers.l2(0.1)),
    lambda: L.SeparableConv1D(3, 2, pointwise_initializer="he_uniform"),
    lambda: L.GlobalMaxPooling2D(),
    lambda: L.Minimum(),
    lambda: L.Subtract(),
    lambda: L.ThresholdedReLU(0.5),
    lambda: L.AlphaDropout(0.1, seed=3),
    lambda: L.GaussianDropout(0.2),
    lambda: L.Cropping2D(((1, 0), (2, 1))),
    lambda: L.ZeroPadding1D(2),
    lambda: L.UpSampling1D(3),
    lambda: L.SpatialDropout2D(0.3, data_format="channels_first"),
    lambda: L.Dense(4, kernel_constraint=tf.keras.constraints.MinMaxNorm(0.1, 2.0)),
    lambda: L.Bidirectional(L.GRU(2), backward_layer=L.GRU(2, go_backwards=True)),
    lambda: L.RNN(L.SimpleRNNCell(3)),
    lambda: L.RNN([L.LSTMCell(2), L.GRUCell(3)], return_sequences=True),
    lambda: L.Embedding(7, 2, embeddings_initializer="uniform"),
    lambda: L.ConvLSTM2D(2, 3, strides=2, padding="same", return_sequences=True, dropout=0.1),
]


@pytest.mark.parametrize("make", ENGINE_LAYERS)
def test_layer_config_round_trips_through_json(make):
    layer = make()
    spec = json.loads(json.dumps(model_config.serialize_layer(layer)))
    rebuilt = model_config.deserialize_layer(spec)
    assert type(rebuilt) is type(layer)
    assert model_config.serialize_layer(rebuilt) == spec


def test_every_layer_class_has_a_config_test():
    tested = set(TF_LAYER_CONFIGS) | {type(make()).__name__ for make in ENGINE_LAYERS}
    tested |= {"Input", "InputLayer", "InputSpec", "Layer", "Lambda", "Wrapper"}
    classes = {
        n for n in L.__all__ if isinstance(getattr(L, n), type) and getattr(L, n).__name__ == n
    }
    untested = sorted(classes - tested)
    # Classes whose config is the generic one exercised above (same constructor pattern).
    covered_by_siblings = {
        "Average",
        "AveragePooling2D",
        "AveragePooling3D",
        "Conv1DTranspose",
        "Conv3DTranspose",
        "Cropping3D",
        "GlobalAveragePooling1D",
        "GlobalAveragePooling3D",
        "GlobalMaxPooling3D",
        "MaxPooling1D",
        "MaxPooling3D",
        "Maximum",
        "Multiply",
        "SimpleRNNCell",
        "LSTMCell",
        "GRUCell",
        "StackedRNNCells",
        "ConvLSTM2DCell",
        "RNN",
        "SpatialDropout3D",
        "UpSampling3D",
        "ZeroPadding3D",
        "Convolution1D",
        "Convolution2D",
        "Convolution3D",
    }
    assert set(untested) <= covered_by_siblings, untested


def test_serialized_initializers_regularizers_constraints_are_keras_json():
    config = L.Dense(
        2,
        kernel_initializer="he_normal",
        kernel_regularizer=tf.keras.regularizers.l2(0.5),
        bias_regularizer=tf.keras.regularizers.l1(0.25),
        bias_constraint=tf.keras.constraints.MaxNorm(3.0, axis=1),
        activation="relu",
    ).get_config()
    assert config["kernel_initializer"]["class_name"] == "VarianceScaling"
    assert config["kernel_initializer"]["config"]["scale"] == 2.0
    assert config["kernel_regularizer"] == {"class_name": "L2", "config": {"l2": 0.5}}
    assert config["bias_regularizer"] == {"class_name": "L1", "config": {"l1": 0.25}}
    assert config["bias_constraint"] == {
        "class_name": "MaxNorm",
        "config": {"max_value": 3.0, "axis": 1},
    }
    assert config["activation"] == "relu"


def test_custom_layers_get_their_arguments_in_the_config():
    class Scale(L.Layer):
        def __init__(self, factor, table=None, **kwargs):
            super().__init__(**kwargs)
            self.factor = factor
            self.table = object() if table is None else table  # not an argument value

        def call(self, x):
            return x * self.factor

    config = Scale(2.5, name="scale").get_config()
    assert config == {"name": "scale", "trainable": True, "dtype": "float32", "factor": 2.5}
    spec = {"class_name": "Scale", "config": config}
    rebuilt = model_config.deserialize_layer(spec, custom_objects={"Scale": Scale})
    assert (type(rebuilt), rebuilt.factor, rebuilt.name) == (Scale, 2.5, "scale")


# -- model configs -------------------------------------------------------------------------


@pytest.mark.parametrize("name", MODELS)
def test_model_from_json_rebuilds_tfs_model(name):
    tf_json = json.loads(str(TF[f"{name}/json"]))
    model = tf.keras.models.model_from_json(str(TF[f"{name}/json"]))
    ours = json.loads(model.to_json())
    assert ours["class_name"] == tf_json["class_name"]
    assert (ours["keras_version"], ours["backend"]) == (tf_json["keras_version"], "tensorflow")
    theirs, mine = tf_json["config"], ours["config"]
    assert [x["class_name"] for x in mine["layers"]] == [x["class_name"] for x in theirs["layers"]]
    for key in ("name", "input_layers", "output_layers"):
        assert mine.get(key) == theirs.get(key)
    for a, b in zip(mine["layers"], theirs["layers"]):
        assert a.get("inbound_nodes") == b.get("inbound_nodes")
        for k, v in b["config"].items():  # every argument TF wrote, with its value
            if not k.endswith("_initializer") and k != "axis":
                assert _normalized(a["config"][k]) == _normalized(v), (b["config"]["name"], k)
    # The engine's own JSON is a fixed point.
    tf.keras.backend.clear_session()
    assert json.loads(tf.keras.models.model_from_json(model.to_json()).to_json()) == ours


def test_functional_config_with_shared_layers_and_two_outputs():
    a, b = tf.keras.Input((4,), name="a"), tf.keras.Input((4,), name="b")
    shared = L.Dense(4, activation="relu", name="shared")
    merged = L.Add(name="add")([shared(a), shared(b)])
    out1 = L.Dense(2, name="out1")(merged)
    out2 = L.Dense(1, name="out2")(shared(merged))
    model = tf.keras.Model([a, b], [out1, out2], name="two_heads")
    config = model.get_config()
    layer = {x["name"]: x for x in config["layers"]}
    assert layer["shared"]["inbound_nodes"] == [
        [["a", 0, 0, {}]],
        [["b", 0, 0, {}]],
        [["add", 0, 0, {}]],
    ]
    assert layer["out2"]["inbound_nodes"] == [[["shared", 2, 0, {}]]]
    assert config["output_layers"] == [["out1", 0, 0], ["out2", 0, 0]]
    x = [np.ones((2, 4), "float32"), np.arange(8, dtype="float32").reshape(2, 4)]
    want = model.predict(x)
    weights = model.get_weights()
    for rebuilt in (
        tf.keras.Model.from_config(config),
        tf.keras.models.model_from_config({"class_name": "Functional", "config": config}),
        tf.keras.models.clone_model(model),
    ):
        assert rebuilt.get_config() == config
        rebuilt.set_weights(weights)
        for got, w in zip(rebuilt.predict(x), want):
            np.testing.assert_allclose(got, w, rtol=1e-5)


def test_clone_model_has_fresh_weights_and_sequential_from_config():
    model = tf.keras.Sequential([L.Dense(5, input_shape=(3,), name="d"), L.Dense(1, name="e")])
    clone = tf.keras.models.clone_model(model)
    assert isinstance(clone, tf.keras.Sequential)
    assert clone.get_config() == model.get_config()
    assert not np.allclose(clone.get_weights()[0], model.get_weights()[0])
    again = tf.keras.Sequential.from_config(model.get_config())
    assert [x.name for x in again.layers] == ["d", "e"]


def test_subclassed_models_have_no_config():
    class Net(tf.keras.Model):
        def __init__(self):
            super().__init__()
            self.d = L.Dense(1)

        def call(self, x):
            return self.d(x)

    with pytest.raises(NotImplementedError, match="subclassed model"):
        Net().get_config()
    with pytest.raises(ValueError, match="subclass model"):
        tf.keras.models.clone_model(Net())


def test_lambda_layers_are_refused():
    spec = {
        "class_name": "Sequential",
        "config": {
            "name": "s",
            "layers": [
                {"class_name": "InputLayer", "config": {"batch_input_shape": [None, 2]}},
                {"class_name": "Lambda", "config": {"name": "l", "function": ["4wEAAA==", None]}},
            ],
        },
    }
    with pytest.raises(ValueError, match="Refusing to load a Lambda layer.*bytecode"):
        tf.keras.models.model_from_config(spec)


def test_unknown_classes_name_the_class_and_custom_objects():
    text = str(TF["mlp/json"]).replace('"class_name": "Dense"', '"class_name": "MyDense"')
    with pytest.raises(ValueError, match="Unknown layer: 'MyDense'.*custom_objects"):
        tf.keras.models.model_from_json(text)
    model = tf.keras.models.model_from_json(text, custom_objects={"MyDense": L.Dense})
    assert [type(x).__name__ for x in model.layers][0] == "Dense"
    bad_init = str(TF["mlp/json"]).replace('"HeNormal"', '"MyInit"')
    with pytest.raises(ValueError, match="Unknown initializer: 'MyInit'.*custom_objects"):
        tf.keras.models.model_from_json(bad_init)
    with pytest.raises(ValueError, match="not valid JSON"):
        tf.keras.models.model_from_json("{not json")
    with pytest.raises(TypeError, match="expects a dictionary"):
        tf.keras.models.model_from_config([])


def test_broken_functional_configs_are_errors():
    config = json.loads(str(TF["two_input/json"]))["config"]
    config["layers"][2]["inbound_nodes"] = [[["nowhere", 0, 0, {}]]]
    with pytest.raises(ValueError, match=r"cannot be built: the inputs of \[.*'dense'"):
        tf.keras.Model.from_config(config)
    config = json.loads(str(TF["two_input/json"]))["config"]
    config["output_layers"] = [["ghost", 0, 0]]
    with pytest.raises(ValueError, match="unknown tensor"):
        tf.keras.Model.from_config(config)


# -- HDF5 ----------------------------------------------------------------------------------


@needs_h5py
@pytest.mark.parametrize("name", MODELS)
def test_load_model_predicts_and_evaluates_as_tf(name):
    model = tf.keras.models.load_model(str(DIR / f"{name}.h5"))
    np.testing.assert_allclose(_predict(model, name), TF[f"{name}/predict"], rtol=1e-5, atol=1e-6)
    x, y = inputs(name)
    assert model.metrics_names == list(TF[f"{name}/metrics_names"])
    got = model.evaluate(x, y, batch_size=8, verbose=0)
    np.testing.assert_allclose(got, TF[f"{name}/evaluate"], rtol=1e-5)


@needs_h5py
def test_load_model_restores_the_optimizer_config():
    mlp = tf.keras.models.load_model(str(DIR / "mlp.h5"))
    assert type(mlp.optimizer).__name__ == "Adam"
    np.testing.assert_allclose(mlp.optimizer._initial_lr, 0.01, rtol=1e-6)
    tf.keras.backend.clear_session()
    two = tf.keras.models.load_model(str(DIR / "two_input.h5"))
    assert type(two.optimizer).__name__ == "SGD"
    np.testing.assert_allclose(two.optimizer.momentum, 0.9, rtol=1e-6)
    tf.keras.backend.clear_session()
    plain = tf.keras.models.load_model(str(DIR / "mlp.h5"), compile=False)
    with pytest.raises(RuntimeError, match="must compile"):
        plain.evaluate(*inputs("mlp"), verbose=0)


@needs_h5py
@pytest.mark.parametrize("name", MODELS)
def test_save_then_load_in_the_engine(name, tmp_path):
    model = tf.keras.models.load_model(str(DIR / f"{name}.h5"))
    model.save(str(tmp_path / "m.h5"))
    model.save_weights(str(tmp_path / "w.h5"))
    tf.keras.backend.clear_session()
    again = tf.keras.models.load_model(str(tmp_path / "m.h5"))
    np.testing.assert_allclose(_predict(again, name), TF[f"{name}/predict"], rtol=1e-5, atol=1e-6)
    x, y = inputs(name)
    np.testing.assert_allclose(
        again.evaluate(x, y, batch_size=8, verbose=0), TF[f"{name}/evaluate"], rtol=1e-5
    )
    with h5py.File(tmp_path / "m.h5", "r") as f:
        assert set(f.attrs) == {"backend", "keras_version", "model_config", "training_config"}
        with h5py.File(DIR / f"{name}.h5", "r") as theirs:
            ours_w, theirs_w = f["model_weights"], theirs["model_weights"]
            names = [
                [n.decode() if isinstance(n, bytes) else n for n in x.attrs["layer_names"]]
                for x in (ours_w, theirs_w)
            ]
            assert names[0] == names[1]
    tf.keras.backend.clear_session()
    fresh = tf.keras.models.model_from_json(str(TF[f"{name}/json"]))
    fresh.load_weights(str(tmp_path / "w.h5"))
    np.testing.assert_allclose(_predict(fresh, name), TF[f"{name}/predict"], rtol=1e-5, atol=1e-6)


@needs_h5py
@pytest.mark.parametrize("name", MODELS)
@pytest.mark.parametrize("by_name", [False, True])
def test_load_weights_from_tf_weight_files(name, by_name):
    model = tf.keras.models.model_from_json(str(TF[f"{name}/json"]))
    model.load_weights(str(DIR / f"{name}_weights.h5"), by_name=by_name)
    np.testing.assert_allclose(_predict(model, name), TF[f"{name}/predict"], rtol=1e-5, atol=1e-6)


@needs_h5py
def test_load_weights_reads_a_whole_model_file_and_skips_unknown_names():
    model = tf.keras.models.model_from_json(str(TF["mlp/json"]))
    model.load_weights(str(DIR / "mlp.h5"))
    np.testing.assert_allclose(_predict(model, "mlp"), TF["mlp/predict"], rtol=1e-5, atol=1e-6)
    other = tf.keras.Sequential([L.Dense(2, input_shape=(8,), name="unrelated")])
    before = other.get_weights()
    other.load_weights(str(DIR / "mlp_weights.h5"), by_name=True)
    for a, b in zip(other.get_weights(), before):
        np.testing.assert_array_equal(a, b)


@needs_h5py
def test_wrong_weight_shapes_and_counts_are_errors():
    wider = tf.keras.Sequential(
        [
            L.Dense(17, input_shape=(8,), name="dense"),
            L.BatchNormalization(name="batch_normalization"),
            L.Dense(3, name="dense_1"),
        ]
    )
    with pytest.raises(ValueError, match=r"has shape \(8, 16\).*has shape \(8, 17\)"):
        wider.load_weights(str(DIR / "mlp_weights.h5"))
    with pytest.raises(ValueError, match=r"has shape \(8, 16\)"):
        wider.load_weights(str(DIR / "mlp_weights.h5"), by_name=True)
    hdf5_weights.load_weights(wider, str(DIR / "mlp_weights.h5"), by_name=True, skip_mismatch=True)
    fewer = tf.keras.Sequential([L.Dense(16, input_shape=(8,))])
    with pytest.raises(ValueError, match="containing 3 layers into a model with 1 layers"):
        fewer.load_weights(str(DIR / "mlp_weights.h5"))
    no_bias = tf.keras.Sequential(
        [L.Dense(16, input_shape=(8,), use_bias=False), L.BatchNormalization(), L.Dense(3)]
    )
    with pytest.raises(ValueError, match="expects 1 weights, but the saved layer 'dense' has 2"):
        no_bias.load_weights(str(DIR / "mlp_weights.h5"))


@needs_h5py
def test_lambda_model_file_is_refused():
    with pytest.raises(ValueError, match="Refusing to load a Lambda layer"):
        tf.keras.models.load_model(str(DIR / "lambda.h5"))


@needs_h5py
def test_truncated_corrupt_and_foreign_files_are_clear_errors(tmp_path):
    data = (DIR / "mlp.h5").read_bytes()
    (tmp_path / "cut.h5").write_bytes(data[: len(data) // 3])
    (tmp_path / "noise.h5").write_bytes(np.random.RandomState(0).bytes(4096))
    for path in ("cut.h5", "noise.h5"):
        with pytest.raises(OSError, match="Unable to open .* as a Keras HDF5 file"):
            tf.keras.models.load_model(str(tmp_path / path))
        with pytest.raises(OSError, match="truncated, corrupt or not HDF5"):
            tf.keras.Sequential([L.Dense(1, input_shape=(2,))]).load_weights(str(tmp_path / path))
    with pytest.raises(FileNotFoundError, match="No file or directory"):
        tf.keras.models.load_model(str(tmp_path / "missing.h5"))
    with zipfile.ZipFile(tmp_path / "keras3.keras", "w") as z:
        z.writestr("config.json", "{}")
    with pytest.raises(OSError, match="Keras 3 '.keras' archive"):
        tf.keras.models.load_model(str(tmp_path / "keras3.keras"))
    with h5py.File(tmp_path / "empty.h5", "w") as f:
        f.attrs["model_config"] = "{broken"
    with pytest.raises(ValueError, match="model config .* is not valid JSON"):
        tf.keras.models.load_model(str(tmp_path / "empty.h5"))
    with h5py.File(tmp_path / "noconfig.h5", "w"):
        pass
    with pytest.raises(ValueError, match="No model config found"):
        tf.keras.models.load_model(str(tmp_path / "noconfig.h5"))
    with pytest.raises(ValueError, match="reads Keras HDF5 files"):
        tf.keras.models.load_model(str(tmp_path))


@needs_h5py
def test_names_and_strings_read_from_files_are_bounded(tmp_path, monkeypatch):
    shutil.copy(DIR / "mlp_weights.h5", tmp_path / "w.h5")
    with h5py.File(tmp_path / "w.h5", "r+") as f:
        f.attrs["layer_names"] = np.array([b"x" * 5000])
    model = tf.keras.models.model_from_json(str(TF["mlp/json"]))
    with pytest.raises(ValueError, match="names longer than 4096"):
        model.load_weights(str(tmp_path / "w.h5"))
    with h5py.File(tmp_path / "w.h5", "r+") as f:
        f.attrs["layer_names"] = np.array([b"dense", b"dense_1", b"batch_normalization"])
        f["dense"].attrs["weight_names"] = np.array([b"dense/kernel:0", b"batch_normalization"])
    with pytest.raises(ValueError, match="no weight dataset 'batch_normalization'"):
        model.load_weights(str(tmp_path / "w.h5"))
    monkeypatch.setattr(hdf5_weights, "MAX_CONFIG_CHARS", 100)
    with pytest.raises(ValueError, match="model_config.*<= 100 chars"):
        tf.keras.models.load_model(str(DIR / "mlp.h5"))


def test_missing_h5py_names_the_extra(monkeypatch, tmp_path):
    monkeypatch.setattr(hdf5_weights, "h5py", None)
    model = tf.keras.Sequential([L.Dense(1, input_shape=(2,))])
    with pytest.raises(ImportError, match=r"pip install flowserve\[keras\]"):
        model.save(str(tmp_path / "m.h5"))
    with pytest.raises(ImportError, match=r"pip install flowserve\[keras\]"):
        model.save_weights(str(tmp_path / "w.h5"))
    with pytest.raises(ImportError, match=r"pip install flowserve\[keras\]"):
        tf.keras.models.load_model(str(DIR / "mlp.h5"))
