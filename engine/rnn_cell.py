"""The ``tf.nn.rnn_cell`` namespace (also ``tf.contrib.rnn``): TF1's RNN cells."""

from engine.rnn import (  # noqa: F401
    BasicLSTMCell,
    BasicRNNCell,
    GRUCell,
    LSTMCell,
    LSTMStateTuple,
    MultiRNNCell,
    RNNCell,
)
from engine.rnn_dropout import DropoutWrapper  # noqa: F401
