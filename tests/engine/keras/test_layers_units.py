"""The engine's Keras convolution, pooling, reshaping, merge, normalization, embedding,
activation and noise layers on their own: argument errors (TF1 Keras' types and messages),
channels_first against channels_last, static shapes, masks, configs and the statistics of
the noise layers."""

from __future__ import annotations

import numpy as np
import pytest

import engine as tf
from engine.keras.base_layer import keras_mask

L = tf.keras.layers


def _ph(shape, dtype=None):
    return tf.placeholder(dtype or tf.float32, shape)


def _normal(seed, *shape):
    return np.random.RandomState(seed).standard_normal(shape).astype(np.float32)


@pytest.fixture(autouse=True)
def _fresh_graph():
    with tf.Graph().as_default():
        yield


ERRORS = [
    (lambda: L.Conv2D(0, 3), ValueError, "Received filters=0"),
    (lambda: L.Conv2D(4, (3, 3, 3)), ValueError, "`kernel_size` argument must be a tuple of 2"),
    (lambda: L.Conv2D(4, 0), ValueError, "does not satisfy the requirement `> 0`"),
    (lambda: L.Conv2D(4, 3, padding="foo"), ValueError, "The `padding` argument must be"),
    (lambda: L.Conv2D(4, 3, padding="causal"), ValueError, "Causal padding is only supported"),
    (lambda: L.Conv2D(4, 3, strides=2, dilation_rate=2), ValueError, "`strides > 1` not"),
    (lambda: L.Conv2D(4, 3, data_format="nhwc"), ValueError, "The `data_format` argument"),
    (lambda: L.Conv2D(4, 3)(_ph([None, 5])), ValueError, "expected ndim=4, found ndim=2"),
    (lambda: L.Conv2D(2, 3)(_ph([None, 5, 5, None])), ValueError, "channel dimension"),
    (lambda: L.Conv2D(2, 7)(_ph([None, 5, 5, 3])), ValueError, "output is <= 0"),
    (lambda: L.Conv2DTranspose(2, 3, strides=2, output_padding=2), ValueError, "output padding"),
    (lambda: L.MaxPooling2D()(_ph([None, 5])), ValueError, "expected ndim=4, found ndim=2"),
    (lambda: L.MaxPooling2D(padding="full"), ValueError, "padding"),
    (lambda: L.GlobalAveragePooling2D()(_ph([None, 5])), ValueError, "expected ndim=4"),
    (lambda: L.Cropping2D((1, 2, 3)), ValueError, "`cropping` should have two elements"),
    (lambda: L.ZeroPadding2D((1, 2, 3)), ValueError, "`padding` should have two elements"),
    (lambda: L.Cropping1D((3, 4))(_ph([None, 7, 2])), ValueError, "cropping parameter"),
    (lambda: L.UpSampling2D(interpolation="foo"), NotImplementedError, "interpolation"),
    (lambda: L.Concatenate()([_ph([None, 2, 3]), _ph([None, 4, 5])]), ValueError, "matching"),
    (lambda: L.Add()([_ph([None, 5]), _ph([None, 4])]), ValueError, "incompatible shapes"),
    (lambda: L.Add()([_ph([3, 5]), _ph([4, 5])]), ValueError, "different batch sizes"),
    (lambda: L.Add()(_ph([None, 5])), ValueError, "should be called on a list of inputs"),
    (lambda: L.Subtract()([_ph([None, 5])] * 3), ValueError, "exactly 2 inputs"),
    (lambda: L.Dot(axes="x"), TypeError, "Invalid type for argument `axes`"),
    (lambda: L.Dot(axes=(1, 2, 3)), ValueError, "it should contain two elements"),
    (lambda: L.Dot(axes=1)([_ph([None, 5]), _ph([None, 4])]), ValueError, "axis values 5"),
    (lambda: L.Embedding(0, 3), ValueError, "should be positive"),
    (lambda: L.LeakyReLU(None), ValueError, "cannot be None"),
    (lambda: L.ReLU(-1.0), ValueError, "max_value of a ReLU layer cannot be a negative"),
    (lambda: L.ReLU(negative_slope=-1.0), ValueError, "negative_slope of a ReLU layer"),
    (lambda: L.ThresholdedReLU(-1.0), ValueError, "should be >=0"),
    (lambda: L.BatchNormalization(axis=3)(_ph([None, 5])), ValueError, "Expected 0 <= axis"),
    (lambda: L.BatchNormalization()(_ph([None, None])), ValueError, "undefined `axis`"),
    (lambda: L.BatchNormalization(fused=True)(_ph([None, 5])), ValueError, "fused=True"),
    (lambda: L.BatchNormalization(renorm=True), ValueError, "renorm"),
    (lambda: L.SpatialDropout2D(0.5)(_ph([None, 5]), training=True), ValueError, "ndim=4"),
    (lambda: L.GaussianDropout(1.5), ValueError, "between 0 and 1"),
    (lambda: L.Conv2D(4, 3, bogus=1), TypeError, "Keyword argument not understood"),
]


@pytest.mark.parametrize("make, error, message", ERRORS)
def test_bad_arguments_raise(make, error, message):
    with pytest.raises(error, match=message.replace("(", r"\(").replace(")", r"\)")):
        make()


def _run(fetches, feed):
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


FIRST_LAST = [
    (lambda f: L.Conv2D(3, (3, 2), strides=(2, 1), padding="same", data_format=f), 4),
    (lambda f: L.Conv1D(3, 3, padding="causal", dilation_rate=2, data_format=f), 3),
    (lambda f: L.Conv3D(2, 2, padding="same", data_format=f), 5),
    (lambda f: L.Conv2DTranspose(2, 3, strides=2, padding="same", data_format=f), 4),
    (lambda f: L.SeparableConv2D(3, 3, depth_multiplier=2, data_format=f), 4),
    (lambda f: L.DepthwiseConv2D(3, depth_multiplier=2, padding="same", data_format=f), 4),
    (lambda f: L.MaxPooling2D(3, 2, padding="same", data_format=f), 4),
    (lambda f: L.AveragePooling1D(2, data_format=f), 3),
    (lambda f: L.MaxPooling3D(data_format=f), 5),
    (lambda f: L.GlobalAveragePooling2D(data_format=f, keepdims=True), 4),
    (lambda f: L.ZeroPadding2D(((1, 0), (2, 1)), data_format=f), 4),
    (lambda f: L.UpSampling2D(2, data_format=f, interpolation="bilinear"), 4),
    (lambda f: L.Cropping2D(((1, 0), (0, 2)), data_format=f), 4),
]


@pytest.mark.parametrize("make, rank", FIRST_LAST)
def test_channels_first_matches_channels_last(make, rank):
    x = _normal(3, 2, *([6] * (rank - 2)), 4)
    to_first = [0, rank - 1, *range(1, rank - 1)]
    to_last = [0, *range(2, rank), 1]
    last, first = make("channels_last"), make("channels_first")
    x_last, x_first = _ph(x.shape), _ph(x.transpose(to_first).shape)
    y_last, y_first = last(x_last), first(x_first)
    assert y_first.shape.as_list() == [y_last.shape.as_list()[i] for i in to_first]
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        first.set_weights(last.get_weights())
        a, b = sess.run([y_last, y_first], {x_last: x, x_first: x.transpose(to_first)})
    np.testing.assert_allclose(b.transpose(to_last), a, rtol=1e-5, atol=1e-5)


SHAPES = [
    (lambda: L.Conv2D(4, 3, strides=2, padding="same"), [None, 7, None, 3]),
    (lambda: L.Conv2DTranspose(2, 3, strides=2), [None, 5, None, 3]),
    (lambda: L.SeparableConv1D(2, 3), [None, 9, 3]),
    (lambda: L.MaxPooling1D(3, padding="same"), [None, 10, 3]),
    (lambda: L.UpSampling2D((2, 3)), [None, 4, None, 2]),
    (lambda: L.UpSampling1D(2), [None, None, 2]),
    (lambda: L.Cropping2D(1), [None, 5, None, 2]),
    (lambda: L.ZeroPadding3D((1, 2, 3)), [None, 2, None, 4, 1]),
    (lambda: L.GlobalMaxPooling1D(), [None, None, 3]),
]


@pytest.mark.parametrize("make, shape", SHAPES)
def test_static_shape_matches_compute_output_shape(make, shape):
    layer = make()
    y = layer(_ph(shape))
    assert y.shape.as_list() == layer.compute_output_shape(tf.TensorShape(shape)).as_list()
    x = _normal(0, *[d or 6 for d in shape])
    ph = _ph(shape)
    out = _run(layer(ph), {ph: x})
    assert y.shape.is_compatible_with(out.shape)


def test_upsampling_bilinear_with_unknown_size_uses_the_resize_op():
    x = _normal(1, 2, 3, 4, 2)
    known, unknown = _ph([None, 3, 4, 2]), _ph([None, None, None, 2])
    layer = L.UpSampling2D(2, interpolation="bilinear")
    a, b = _run([layer(known), layer(unknown)], {known: x, unknown: x})
    np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-6)


def test_embedding_mask_reaches_global_average_pooling():
    ids = np.array([[3, 1, 0, 0], [2, 0, 5, 0]], np.int32)
    ph = _ph([None, 4], tf.int32)
    emb = L.Embedding(6, 3, mask_zero=True, input_length=4)
    vectors = emb(ph)
    assert keras_mask(vectors) is not None
    pooled = L.GlobalAveragePooling1D()(vectors)
    assert keras_mask(pooled) is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        table = emb.get_weights()[0]
        got, mask = sess.run([pooled, keras_mask(vectors)], {ph: ids})
    np.testing.assert_array_equal(mask, ids != 0)
    want = [table[row[row != 0]].mean(0) for row in ids]
    np.testing.assert_allclose(got, want, rtol=1e-6)
    assert emb.compute_output_shape(tf.TensorShape([None, 4])).as_list() == [None, 4, 3]


def test_embedding_without_mask_zero_has_no_mask_and_casts_float_ids():
    ph = _ph([None, 2])
    emb = L.Embedding(4, 2)
    y = emb(ph)
    assert keras_mask(y) is None
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        table = emb.get_weights()[0]
        got = sess.run(y, {ph: [[1.0, 3.0]]})
    np.testing.assert_allclose(got[0], table[[1, 3]])
    assert np.abs(table).max() <= 0.05  # Keras' 'uniform' initializer


def test_batch_norm_variables_and_updates():
    bn = L.BatchNormalization()
    bn(_ph([None, 3]))
    assert [w.name for w in bn.trainable_weights] == [
        "batch_normalization/gamma:0",
        "batch_normalization/beta:0",
    ]
    assert [w.name for w in bn.non_trainable_weights] == [
        "batch_normalization/moving_mean:0",
        "batch_normalization/moving_variance:0",
    ]
    assert len(bn.updates) == 2
    assert bn.get_config()["momentum"] == 0.99 and bn.get_config()["epsilon"] == 1e-3
    frozen = L.BatchNormalization()
    frozen(_ph([None, 3]), training=False)
    assert frozen.updates == []


def test_batch_norm_moving_statistics_follow_the_learning_phase():
    x = _normal(2, 16, 3) * 3 + 2
    ph = _ph([None, 3])
    bn = L.BatchNormalization(momentum=0.5)
    y = bn(ph)
    phase = tf.keras.backend.learning_phase()
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        inference, _ = sess.run([y, bn.updates], {ph: x})
        np.testing.assert_allclose(inference, x / np.sqrt(1 + 1e-3), rtol=1e-5)
        assert np.all(sess.run(bn.moving_mean) == 0)
        train, _ = sess.run([y, bn.updates], {ph: x, phase: True})
        mean = sess.run(bn.moving_mean)
    np.testing.assert_allclose(mean, x.mean(0) / 2, rtol=1e-5)
    want = (x - x.mean(0)) / np.sqrt(x.var(0) + 1e-3)
    np.testing.assert_allclose(train, want, rtol=1e-4, atol=1e-5)


def test_noise_layers_are_the_identity_at_inference():
    x = _normal(4, 50, 8)
    ph = _ph([None, 8])
    layers = [L.GaussianNoise(1.0), L.GaussianDropout(0.4), L.AlphaDropout(0.4)]
    layers += [L.SpatialDropout1D(0.5)]
    outs = [layer(ph) for layer in layers[:3]]
    ph3 = _ph([None, 5, 8])
    outs.append(layers[3](ph3))
    got = _run(outs, {ph: x, ph3: x.reshape(10, 5, 8)})
    for g in got[:3]:
        np.testing.assert_array_equal(g, x)
    np.testing.assert_array_equal(got[3], x.reshape(10, 5, 8))


def test_noise_layers_statistics_in_training():
    n = 40000
    ones = np.ones((n, 1), np.float32)
    normal = _normal(5, n, 1)
    ph = _ph([None, 1])
    noise = L.GaussianNoise(0.5)(ph, training=True)
    gdrop = L.GaussianDropout(0.2)(ph, training=True)
    adrop_layer = L.AlphaDropout(0.2)
    adrop = adrop_layer(ph, training=True)
    a, b, c = _run([noise, gdrop, adrop], {ph: ones})
    assert abs(a.std() - 0.5) < 0.02 and abs(a.mean() - 1) < 0.02
    assert abs(b.mean() - 1) < 0.02 and abs(b.std() - np.sqrt(0.2 / 0.8)) < 0.02
    assert a.shape == b.shape == c.shape == (n, 1)
    # Alpha dropout keeps a standard normal input at mean 0 and variance 1.
    (d,) = _run([adrop], {ph: normal})
    assert abs(d.mean()) < 0.03 and abs(d.var() - 1) < 0.05
    alpha_p = -1.6732632423543772 * 1.0507009873554805
    scale = ((1 - 0.2) * (1 + 0.2 * alpha_p**2)) ** -0.5
    dropped = -scale * alpha_p * 0.2 + scale * alpha_p
    assert abs(np.isclose(d, dropped, atol=1e-6).mean() - 0.2) < 0.02


def test_spatial_dropout_drops_whole_channels():
    x = np.ones((64, 5, 5, 6), np.float32)
    ph = _ph([None, 5, 5, 6])
    (y,) = _run([L.SpatialDropout2D(0.5)(ph, training=True)], {ph: x})
    per_map = y.reshape(64, 25, 6)
    assert np.all(per_map.min(1) == per_map.max(1))
    assert set(np.unique(per_map)) <= {0.0, 2.0}
    assert 0.35 < (per_map[:, 0] == 0).mean() < 0.65


def test_merge_masks_and_functional_forms():
    ids = _ph([None, 3], tf.int32)
    a = L.Embedding(5, 2, mask_zero=True)(ids)
    b = L.Embedding(5, 2)(ids)
    summed = L.add([a, b])
    joined = L.concatenate([a, b])
    ids_v = np.array([[1, 0, 2]], np.int32)
    m1, m2 = _run([keras_mask(summed), keras_mask(joined)], {ids: ids_v})
    np.testing.assert_array_equal(m1, ids_v != 0)
    np.testing.assert_array_equal(m2, ids_v != 0)
    for name in ("add", "subtract", "multiply", "average", "maximum", "minimum"):
        assert name in L.__all__ and callable(getattr(L, name))
    assert {"concatenate", "dot"} <= set(L.__all__)


def test_aliases_and_configs():
    assert L.MaxPool2D is L.MaxPooling2D and L.AvgPool1D is L.AveragePooling1D
    assert L.GlobalAvgPool2D is L.GlobalAveragePooling2D
    assert L.GlobalMaxPool3D is L.GlobalMaxPooling3D
    assert L.Convolution2D is L.Conv2D
    conv = L.Conv2D(4, 3, strides=2, padding="same", activation="relu", name="c")
    config = conv.get_config()
    assert config["kernel_size"] == (3, 3) and config["strides"] == (2, 2)
    assert config["activation"] == "relu" and config["padding"] == "same"
    again = L.Conv2D.from_config({**config, "name": "c2"})
    assert again.kernel_size == (3, 3) and again.filters == 4
    assert L.MaxPooling1D().get_config()["data_format"] == "channels_last"
    assert L.Concatenate(axis=1).get_config()["axis"] == 1
    assert L.Dot(axes=(1, 2), normalize=True).get_config()["normalize"] is True
    assert L.Embedding(3, 2, mask_zero=True).get_config()["mask_zero"] is True
    assert L.LeakyReLU().get_config()["alpha"] == pytest.approx(0.3)


def test_conv_regularizers_and_constraints_reach_the_weights():
    conv = L.Conv1D(2, 2, kernel_regularizer="l2", bias_regularizer="l1")
    conv(_ph([None, 4, 3]))
    assert len(conv.losses) == 2
    assert [w.name for w in conv.weights] == ["conv1d/kernel:0", "conv1d/bias:0"]
    assert conv.kernel.shape.as_list() == [2, 3, 2]
