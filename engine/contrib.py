"""The ``tf.contrib`` namespace: the engine's equivalents of the contrib APIs classic TF1
programs use (``contrib.rnn``, ``contrib.layers``). Anything else raises an AttributeError
that says it is not available, instead of a bare missing attribute."""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import types

from engine import (
    contrib_crf,
    contrib_layers,
    contrib_seq2seq,
    conv_layers,
    core_layers,
    distributions,
    init_ops,
    rnn,
    rnn_dropout,
)
from engine.ops import math as math_ops
from engine.ops import nn_losses, reduction
from engine.util.namespaces import Namespace, namespace


def _l2_regularizer(scale, scope=None):
    if scale < 0:
        raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale}")

    def l2(weights):
        with_scope = scope or "l2_regularizer"
        return math_ops.multiply(scale, nn_losses.l2_loss(weights), name=with_scope)

    return l2


def _l1_regularizer(scale, scope=None):
    if scale < 0:
        raise ValueError(f"Setting a scale less than 0 on a regularizer: {scale}")

    def l1(weights):
        total = reduction.reduce_sum(math_ops.abs(weights))
        return math_ops.multiply(scale, total, name=scope or "l1_regularizer")

    return l1


def _xavier_initializer(uniform=True, seed=None, dtype=None):
    del dtype
    return init_ops.GlorotUniform(seed=seed) if uniform else init_ops.GlorotNormal(seed=seed)


rnn_namespace = namespace(
    "tf.contrib.rnn",
    BasicRNNCell=rnn.BasicRNNCell,
    BasicLSTMCell=rnn.BasicLSTMCell,
    LSTMCell=rnn.LSTMCell,
    GRUCell=rnn.GRUCell,
    MultiRNNCell=rnn.MultiRNNCell,
    DropoutWrapper=rnn_dropout.DropoutWrapper,
    LSTMStateTuple=rnn.LSTMStateTuple,
    RNNCell=rnn.RNNCell,
    static_rnn=rnn.static_rnn,
    static_bidirectional_rnn=rnn.static_bidirectional_rnn,
)

layers_namespace = namespace(
    "tf.contrib.layers",
    flatten=core_layers.flatten,
    fully_connected=contrib_layers.fully_connected,
    conv2d=contrib_layers.conv2d,
    convolution2d=contrib_layers.conv2d,
    batch_norm=contrib_layers.batch_norm,
    max_pool2d=contrib_layers.max_pool2d,
    avg_pool2d=contrib_layers.avg_pool2d,
    dropout=contrib_layers.dropout,
    embed_sequence=contrib_layers.embed_sequence,
    xavier_initializer=_xavier_initializer,
    xavier_initializer_conv2d=_xavier_initializer,
    l2_regularizer=_l2_regularizer,
    l1_regularizer=_l1_regularizer,
    conv2d_transpose=conv_layers.conv2d_transpose,
)

_OUT_OF_SCOPE = ("learn", "factorization", "tensor_forest", "boosted_trees", "estimator")


class _Contrib(Namespace):
    def __getattr__(self, name):
        if name in _OUT_OF_SCOPE:
            raise AttributeError(
                f"tf.contrib.{name} is not available in flowserve's engine and is out of its "
                "scope: contrib's canned estimators and models are not provided (tf.estimator "
                "with your own model_fn is)"
            )
        return super().__getattr__(name)


contrib = _Contrib("tf.contrib")
contrib.__dict__.update(
    rnn=rnn_namespace,
    layers=layers_namespace,
    legacy_seq2seq=contrib_seq2seq.legacy_seq2seq,
    distributions=distributions,
    crf=namespace(
        "tf.contrib.crf",
        **{n: getattr(contrib_crf, n) for n in contrib_crf.__all__},
    ),
    seq2seq=contrib_seq2seq.seq2seq,
)


# `from tensorflow.contrib import rnn` and `import tensorflow.contrib.eager as tfe`, written
# against the engine: the module's own names are tf.contrib's, and submodule imports of what
# the engine lacks fail with the message that names it, not "engine.contrib is not a package".
rnn, layers = rnn_namespace, layers_namespace
__path__: list[str] = []


class _ContribLoader(importlib.abc.Loader):
    def __init__(self, namespace):
        self._namespace = namespace

    def create_module(self, spec):
        del spec
        return self._namespace

    def exec_module(self, module):
        del module


class _ContribFinder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        del path, target
        prefix = __name__ + "."
        if not fullname.startswith(prefix):
            return None
        name = fullname[len(prefix) :]
        member = contrib.__dict__.get(name)
        if not isinstance(member, types.ModuleType):
            try:
                getattr(contrib, name)
            except AttributeError as e:
                raise ModuleNotFoundError(str(e), name=fullname) from None
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return importlib.util.spec_from_loader(fullname, _ContribLoader(member))


if not any(isinstance(f, _ContribFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _ContribFinder())
