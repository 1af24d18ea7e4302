"""TF 1.15's canned estimators (v1): ``LinearClassifier``/``LinearRegressor``,
``DNNClassifier``/``DNNRegressor``, ``DNNLinearCombinedClassifier``/``Regressor`` and
``BaselineClassifier``/``Regressor``, each an ``Estimator`` whose ``model_fn`` builds logits
from feature columns and hands them to a head (``engine/estimator_heads.py``).

Variables are named as TF 1.15 names them, so their checkpoints restore both ways:
``linear/linear_model/<col>/weights``, ``linear/linear_model/bias_weights``,
``dnn/input_from_feature_columns/input_layer/<col>_embedding/embedding_weights``,
``dnn/hiddenlayer_<i>/kernel|bias``, ``dnn/logits/kernel|bias``, ``baseline/bias``.
Defaults are TF's: Adagrad(0.05) for DNNs, Ftrl(0.2) for linear models (an optimizer of
``None`` means Ftrl(min(0.2, 1/sqrt(#columns)))), Ftrl(0.3) for baselines, Adagrad(0.001)
and Ftrl(min(0.005, 1/sqrt(#columns))) for the combined model's two parts; the loss is
summed over the batch (``loss_reduction=SUM``).

    >>> est = tf.estimator.DNNClassifier([64, 32], [fc.numeric_column("x", shape=[4])])
    >>> est.train(input_fn, steps=100); est.evaluate(input_fn)["accuracy"]
"""

from __future__ import annotations

import math

from engine import summary
from engine.conv_layers import batch_normalization
from engine.core_layers import dense, dropout
from engine.estimator import Estimator
from engine.estimator_heads import binary_or_multi_class_head, regression_head
from engine.estimator_spec import ModeKeys
from engine.feature_column_core import _NumericColumn
from engine.feature_column_dense import input_layer, linear_model
from engine.framework.graph import GraphKeys, control_dependencies, get_collection
from engine.framework.sparse_tensor import SparseTensor
from engine.init_ops import glorot_uniform_initializer, zeros_initializer
from engine.losses import Reduction
from engine.ops import array as array_ops
from engine.ops import array_transform, slicing
from engine.ops import math as math_ops
from engine.ops.control_flow import group
from engine.ops.logging_ops import assert_equal
from engine.ops.nn import relu
from engine.ops.nn_impl import zero_fraction
from engine.ops.state import assign_add
from engine.training import training_util
from engine.training.optimizer import (
    AdagradOptimizer,
    AdamOptimizer,
    GradientDescentOptimizer,
    Optimizer,
    RMSPropOptimizer,
)
from engine.training.optimizers_more import FtrlOptimizer
from engine.variable_scope import get_variable, get_variable_scope, variable_scope

__all__ = [
    "BaselineClassifier",
    "BaselineRegressor",
    "DNNClassifier",
    "DNNLinearCombinedClassifier",
    "DNNLinearCombinedRegressor",
    "DNNRegressor",
    "LinearClassifier",
    "LinearRegressor",
]

_OPTIMIZERS = {
    "Adagrad": AdagradOptimizer,
    "Adam": AdamOptimizer,
    "Ftrl": FtrlOptimizer,
    "RMSProp": RMSPropOptimizer,
    "SGD": GradientDescentOptimizer,
}


def get_optimizer_instance(opt, learning_rate=None) -> Optimizer:
    """TF's ``optimizers.get_optimizer_instance``: a name (Adagrad, Adam, Ftrl, RMSProp,
    SGD) at ``learning_rate``, an Optimizer, or a callable returning one."""
    if isinstance(opt, str):
        if opt in _OPTIMIZERS:
            if not learning_rate:
                raise ValueError("learning_rate must be specified when opt is string.")
            return _OPTIMIZERS[opt](learning_rate=learning_rate)
        raise ValueError(
            f"Unsupported optimizer name: {opt}. Supported names are: {tuple(sorted(_OPTIMIZERS))}"
        )
    if callable(opt) and not isinstance(opt, Optimizer):
        opt = opt()
    if not isinstance(opt, Optimizer):
        raise ValueError(f"The given object is not an Optimizer instance. Given: {opt}")
    return opt


def _check_features(features) -> None:
    if not isinstance(features, dict):
        raise ValueError(
            f"features should be a dictionary of `Tensor`s. Given type: {type(features)}"
        )


def _no_partitioner(partitioner, what: str) -> None:
    if partitioner is not None:
        raise NotImplementedError(
            f"{what} is not supported by the engine (no partitioned variables)"
        )


def _values(features) -> list:
    return [v for v in features.values() if hasattr(v, "graph")]


# -- linear ----------------------------------------------------------------------------------


def _fraction_of_zero(variables):
    with variable_scope(None, default_name="zero_fraction"):
        sizes = [math_ops.cast(array_ops.size(v), "float32") for v in variables]
        zeros = [zero_fraction(v) * s for v, s in zip(variables, sizes)]
        return math_ops.add_n(zeros) / math_ops.add_n(sizes)


def _linear_logits(features, feature_columns, units: int, sparse_combiner: str):
    """TF's ``linear_logit_fn_builder`` (v1 columns): ``linear_model`` plus the ``bias`` and
    ``fraction_of_zero_weights`` summaries."""
    cols_to_vars = {}
    logits = linear_model(
        features,
        feature_columns,
        units=units,
        sparse_combiner=sparse_combiner,
        cols_to_vars=cols_to_vars,
    )
    bias = cols_to_vars.pop("bias")
    variables = [v for vs in cols_to_vars.values() for v in vs]
    if units > 1:
        summary.histogram("bias", bias[0])
    else:
        summary.scalar("bias", slicing.gather(bias[0], 0))
    if variables:
        summary.scalar("fraction_of_zero_weights", _fraction_of_zero(variables))
    return logits


def _linear_model_fn(features, labels, mode, head, feature_columns, optimizer, sparse_combiner):
    _check_features(features)
    with variable_scope("linear", values=_values(features)):
        logits = _linear_logits(features, feature_columns, head.logits_dimension, sparse_combiner)
        if optimizer is None:
            optimizer = FtrlOptimizer(learning_rate=min(0.2, 1.0 / math.sqrt(len(feature_columns))))
        optimizer = get_optimizer_instance(optimizer, learning_rate=0.2)
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, optimizer=optimizer, logits=logits
        )


class LinearClassifier(Estimator):
    """TF 1.15's ``tf.estimator.LinearClassifier``: ``linear_model`` logits, a binary
    (``n_classes=2``) or multi-class head."""

    def __init__(
        self,
        feature_columns,
        model_dir=None,
        n_classes=2,
        weight_column=None,
        label_vocabulary=None,
        optimizer="Ftrl",
        config=None,
        partitioner=None,
        warm_start_from=None,
        loss_reduction=Reduction.SUM,
        sparse_combiner="sum",
    ):
        _no_partitioner(partitioner, "partitioner")
        head = binary_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        columns = tuple(feature_columns or [])

        def _model_fn(features, labels, mode, config):
            del config
            return _linear_model_fn(
                features, labels, mode, head, columns, optimizer, sparse_combiner
            )

        super().__init__(_model_fn, model_dir, config, warm_start_from=warm_start_from)


class LinearRegressor(Estimator):
    """TF 1.15's ``tf.estimator.LinearRegressor``: ``linear_model`` logits, squared error."""

    def __init__(
        self,
        feature_columns,
        model_dir=None,
        label_dimension=1,
        weight_column=None,
        optimizer="Ftrl",
        config=None,
        partitioner=None,
        warm_start_from=None,
        loss_reduction=Reduction.SUM,
        sparse_combiner="sum",
    ):
        _no_partitioner(partitioner, "partitioner")
        head = regression_head(weight_column, label_dimension, loss_reduction)
        columns = tuple(feature_columns or [])

        def _model_fn(features, labels, mode, config):
            del config
            return _linear_model_fn(
                features, labels, mode, head, columns, optimizer, sparse_combiner
            )

        super().__init__(_model_fn, model_dir, config, warm_start_from=warm_start_from)


# -- DNN ---------------------------------------------------------------------------------------


def _hidden_layer_summary(value, tag: str) -> None:
    summary.scalar(f"{tag}/fraction_of_zero_values", zero_fraction(value))
    summary.histogram(f"{tag}/activation", value)


def _dnn_logits(features, mode, units, hidden_units, feature_columns, activation_fn, rate, bn):
    """TF's ``_DNNModel.call`` in the current (``dnn``) scope: the input layer, the hidden
    layers (glorot-uniform kernels, dropout when training, optional batch norm), the logits."""
    is_training = mode == ModeKeys.TRAIN
    with variable_scope("input_from_feature_columns"):
        net = input_layer(features, feature_columns)
    scope = get_variable_scope().name
    for layer_id, width in enumerate(hidden_units):
        name = f"hiddenlayer_{layer_id}"
        net = dense(
            net,
            width,
            activation=activation_fn,
            kernel_initializer=glorot_uniform_initializer(),
            name=name,
        )
        if rate is not None and is_training:
            net = dropout(net, rate=rate, training=True)
        if bn:
            # TF 1.15 builds the layer inside the hidden layer's scope.
            with variable_scope(name):
                net = batch_normalization(
                    net, momentum=0.999, training=is_training, name=f"batchnorm_{layer_id}"
                )
        _hidden_layer_summary(net, f"{scope}/{name}")
    logits = dense(
        net, units, activation=None, kernel_initializer=glorot_uniform_initializer(), name="logits"
    )
    _hidden_layer_summary(logits, f"{scope}/logits")
    return logits


def _dnn_model_fn(features, labels, mode, head, params: dict):
    _check_features(features)
    optimizer = get_optimizer_instance(params["optimizer"], learning_rate=0.05)
    with variable_scope("dnn", values=_values(features)):
        logits = _dnn_logits(
            features,
            mode,
            head.logits_dimension,
            params["hidden_units"],
            params["feature_columns"],
            params["activation_fn"],
            params["dropout"],
            params["batch_norm"],
        )
        return head.create_estimator_spec(
            features=features, mode=mode, labels=labels, optimizer=optimizer, logits=logits
        )


def _dnn_params(hidden_units, feature_columns, optimizer, activation_fn, dropout_rate, bn):
    return {
        "hidden_units": tuple(hidden_units),
        "feature_columns": tuple(feature_columns or []),
        "optimizer": optimizer,
        "activation_fn": activation_fn,
        "dropout": dropout_rate,
        "batch_norm": bn,
    }


class DNNClassifier(Estimator):
    """TF 1.15's ``tf.estimator.DNNClassifier``: ``input_layer``, ``hidden_units`` dense
    layers, logits; a binary (``n_classes=2``) or multi-class head."""

    def __init__(
        self,
        hidden_units,
        feature_columns,
        model_dir=None,
        n_classes=2,
        weight_column=None,
        label_vocabulary=None,
        optimizer="Adagrad",
        activation_fn=relu,
        dropout=None,
        input_layer_partitioner=None,
        config=None,
        warm_start_from=None,
        loss_reduction=Reduction.SUM,
        batch_norm=False,
    ):
        _no_partitioner(input_layer_partitioner, "input_layer_partitioner")
        head = binary_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        params = _dnn_params(
            hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm
        )

        def _model_fn(features, labels, mode, config):
            del config
            return _dnn_model_fn(features, labels, mode, head, params)

        super().__init__(_model_fn, model_dir, config, warm_start_from=warm_start_from)


class DNNRegressor(Estimator):
    """TF 1.15's ``tf.estimator.DNNRegressor``: the DNN of ``DNNClassifier``, squared error."""

    def __init__(
        self,
        hidden_units,
        feature_columns,
        model_dir=None,
        label_dimension=1,
        weight_column=None,
        optimizer="Adagrad",
        activation_fn=relu,
        dropout=None,
        input_layer_partitioner=None,
        config=None,
        warm_start_from=None,
        loss_reduction=Reduction.SUM,
        batch_norm=False,
    ):
        _no_partitioner(input_layer_partitioner, "input_layer_partitioner")
        head = regression_head(weight_column, label_dimension, loss_reduction)
        params = _dnn_params(
            hidden_units, feature_columns, optimizer, activation_fn, dropout, batch_norm
        )

        def _model_fn(features, labels, mode, config):
            del config
            return _dnn_model_fn(features, labels, mode, head, params)

        super().__init__(_model_fn, model_dir, config, warm_start_from=warm_start_from)


# -- DNN + linear --------------------------------------------------------------------------


def _combined_model_fn(features, labels, mode, head, params: dict):
    """TF's ``_dnn_linear_combined_model_fn``: the DNN's and the linear model's logits
    summed, each part trained by its own optimizer over its own scope's variables."""
    _check_features(features)
    linear_columns, dnn_columns = params["linear_feature_columns"], params["dnn_feature_columns"]
    if not linear_columns and not dnn_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")
    parts = []
    if dnn_columns:
        if not params["dnn_hidden_units"]:
            raise ValueError(
                "dnn_hidden_units must be defined when dnn_feature_columns is specified."
            )
        optimizer = get_optimizer_instance(params["dnn_optimizer"], learning_rate=0.001)
        with variable_scope("dnn", values=_values(features)) as scope:
            logits = _dnn_logits(
                features,
                mode,
                head.logits_dimension,
                params["dnn_hidden_units"],
                dnn_columns,
                params["dnn_activation_fn"],
                params["dnn_dropout"],
                params["batch_norm"],
            )
        parts.append((logits, optimizer, scope.name))
    if linear_columns:
        rate = min(0.005, 1.0 / math.sqrt(len(linear_columns)))
        optimizer = get_optimizer_instance(params["linear_optimizer"], learning_rate=rate)
        with variable_scope("linear", values=_values(features)) as scope:
            logits = _linear_logits(
                features, linear_columns, head.logits_dimension, params["linear_sparse_combiner"]
            )
            _hidden_layer_summary(logits, scope.name)
        parts.append((logits, optimizer, scope.name))
    logits = parts[0][0] if len(parts) == 1 else parts[0][0] + parts[1][0]

    def _train_op_fn(loss):
        train_ops = [
            opt.minimize(loss, var_list=get_collection(GraphKeys.TRAINABLE_VARIABLES, scope=scope))
            for _, opt, scope in parts
        ]
        with control_dependencies([group(*train_ops)]):
            return assign_add(training_util.get_global_step(), 1).op

    return head.create_estimator_spec(
        features=features, mode=mode, labels=labels, train_op_fn=_train_op_fn, logits=logits
    )


def _combined_params(
    linear_feature_columns,
    linear_optimizer,
    dnn_feature_columns,
    dnn_optimizer,
    dnn_hidden_units,
    dnn_activation_fn,
    dnn_dropout,
    batch_norm,
    linear_sparse_combiner,
):
    return {
        "linear_feature_columns": tuple(linear_feature_columns or []),
        "linear_optimizer": linear_optimizer,
        "dnn_feature_columns": tuple(dnn_feature_columns or []),
        "dnn_optimizer": dnn_optimizer,
        "dnn_hidden_units": dnn_hidden_units,
        "dnn_activation_fn": dnn_activation_fn,
        "dnn_dropout": dnn_dropout,
        "batch_norm": batch_norm,
        "linear_sparse_combiner": linear_sparse_combiner,
    }


def _check_combined_columns(linear_feature_columns, dnn_feature_columns) -> None:
    if not linear_feature_columns and not dnn_feature_columns:
        raise ValueError("Either linear_feature_columns or dnn_feature_columns must be defined.")


class DNNLinearCombinedClassifier(Estimator):
    """TF 1.15's ``tf.estimator.DNNLinearCombinedClassifier`` (wide and deep)."""

    def __init__(
        self,
        model_dir=None,
        linear_feature_columns=None,
        linear_optimizer="Ftrl",
        dnn_feature_columns=None,
        dnn_optimizer="Adagrad",
        dnn_hidden_units=None,
        dnn_activation_fn=relu,
        dnn_dropout=None,
        n_classes=2,
        weight_column=None,
        label_vocabulary=None,
        input_layer_partitioner=None,
        config=None,
        warm_start_from=None,
        loss_reduction=Reduction.SUM,
        batch_norm=False,
        linear_sparse_combiner="sum",
    ):
        _check_combined_columns(linear_feature_columns, dnn_feature_columns)
        _no_partitioner(input_layer_partitioner, "input_layer_partitioner")
        head = binary_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )
        params = _combined_params(
            linear_feature_columns,
            linear_optimizer,
            dnn_feature_columns,
            dnn_optimizer,
            dnn_hidden_units,
            dnn_activation_fn,
            dnn_dropout,
            batch_norm,
            linear_sparse_combiner,
        )

        def _model_fn(features, labels, mode, config):
            del config
            return _combined_model_fn(features, labels, mode, head, params)

        super().__init__(_model_fn, model_dir, config, warm_start_from=warm_start_from)


class DNNLinearCombinedRegressor(Estimator):
    """TF 1.15's ``tf.estimator.DNNLinearCombinedRegressor`` (wide and deep, squared error)."""

    def __init__(
        self,
        model_dir=None,
        linear_feature_columns=None,
        linear_optimizer="Ftrl",
        dnn_feature_columns=None,
        dnn_optimizer="Adagrad",
        dnn_hidden_units=None,
        dnn_activation_fn=relu,
        dnn_dropout=None,
        label_dimension=1,
        weight_column=None,
        input_layer_partitioner=None,
        config=None,
        warm_start_from=None,
        loss_reduction=Reduction.SUM,
        batch_norm=False,
        linear_sparse_combiner="sum",
    ):
        _check_combined_columns(linear_feature_columns, dnn_feature_columns)
        _no_partitioner(input_layer_partitioner, "input_layer_partitioner")
        head = regression_head(weight_column, label_dimension, loss_reduction)
        params = _combined_params(
            linear_feature_columns,
            linear_optimizer,
            dnn_feature_columns,
            dnn_optimizer,
            dnn_hidden_units,
            dnn_activation_fn,
            dnn_dropout,
            batch_norm,
            linear_sparse_combiner,
        )

        def _model_fn(features, labels, mode, config):
            del config
            return _combined_model_fn(features, labels, mode, head, params)

        super().__init__(_model_fn, model_dir, config, warm_start_from=warm_start_from)


# -- baseline --------------------------------------------------------------------------------


def _weight_column_key(weight_column):
    if weight_column is None or isinstance(weight_column, str):
        return weight_column
    if not isinstance(weight_column, _NumericColumn):
        raise TypeError(
            "Weight column must be either a string or _NumericColumn. "
            f"Given type: {type(weight_column)}."
        )
    return weight_column.key


def _batch_size(feature):
    if isinstance(feature, SparseTensor):
        return math_ops.cast(slicing.gather(feature.dense_shape, 0), "int32")
    return array_ops.shape(feature)[0]


def _baseline_model_fn(features, labels, mode, head, optimizer, weight_column):
    """TF's ``_baseline_model_fn``: logits ``baseline/bias`` (zeros, one per output) for
    every example, whatever its features."""
    _check_features(features)
    weight_key = _weight_column_key(weight_column)
    sizes = [_batch_size(f) for k, f in features.items() if k != weight_key]
    if not sizes:
        raise ValueError("features must hold at least one feature besides the weight column")
    checks = [assert_equal(sizes[0], s) for s in sizes[1:]]
    units = head.logits_dimension
    with control_dependencies(checks):
        with variable_scope("baseline"):
            bias = get_variable("bias", shape=[units], initializer=zeros_initializer())
            ones = array_ops.ones(array_transform.stack([sizes[0], units]))
            logits = math_ops.multiply(bias, ones)

    def train_op_fn(loss):
        opt = get_optimizer_instance(optimizer, learning_rate=0.3)
        return opt.minimize(loss, global_step=training_util.get_global_step())

    return head.create_estimator_spec(
        features=features, mode=mode, logits=logits, labels=labels, train_op_fn=train_op_fn
    )


class BaselineClassifier(Estimator):
    """TF 1.15's ``tf.estimator.BaselineClassifier``: learns the class prior only."""

    def __init__(
        self,
        model_dir=None,
        n_classes=2,
        weight_column=None,
        label_vocabulary=None,
        optimizer="Ftrl",
        config=None,
        loss_reduction=Reduction.SUM,
    ):
        head = binary_or_multi_class_head(
            n_classes, weight_column, label_vocabulary, loss_reduction
        )

        def _model_fn(features, labels, mode, config):
            del config
            return _baseline_model_fn(features, labels, mode, head, optimizer, weight_column)

        super().__init__(_model_fn, model_dir, config)


class BaselineRegressor(Estimator):
    """TF 1.15's ``tf.estimator.BaselineRegressor``: learns the label mean only."""

    def __init__(
        self,
        model_dir=None,
        label_dimension=1,
        weight_column=None,
        optimizer="Ftrl",
        config=None,
        loss_reduction=Reduction.SUM,
    ):
        head = regression_head(weight_column, label_dimension, loss_reduction)

        def _model_fn(features, labels, mode, config):
            del config
            return _baseline_model_fn(features, labels, mode, head, optimizer, weight_column)

        super().__init__(_model_fn, model_dir, config)
