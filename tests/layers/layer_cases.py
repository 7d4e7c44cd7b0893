"""One ``LayerCase`` per public layer class of ``tapeflow.keras.layers``: the layer battery's table.

A new layer gets a case here (``tests/layers/test_layer_battery.py`` fails for a public layer
class without one). Shapes are small: the gradient checks step every input and weight element.
Inputs are chosen away from kinks (no ties for max pooling, tanh where an activation is
needed), so second derivatives hold against finite differences.
"""
import numpy as np

import tapeflow as tf
from tapeflow.keras import layers

from tests.layers.battery import LayerCase

__all__ = ["CASES", "EXEMPT"]


def distinct(shape):
    """An input builder: values 0.1 apart in random order (a maximum without ties, so max
    pooling is differentiable there)."""
    def build(rng, dtype):
        n = int(np.prod(shape))
        return (rng.permutation(n) * 0.1 - n * 0.05).reshape(shape).astype(dtype)
    return build


def token_ids(shape, vocabulary):
    """An input builder: integer ids in [0, vocabulary) (whatever dtype is asked)."""
    def build(rng, dtype):
        return rng.integers(0, vocabulary, shape).astype(np.int32)
    return build


def _lambda_function(x, scale):
    """The Lambda case's function: smooth, shape-changing, with a constant and an argument."""
    return tf.reduce_sum(tf.tanh(x) * scale, axis=-1) + tf.constant([0.5, -1.0, 2.0], x.dtype)


CASES = [
    # --- core ---
    LayerCase(layers.Dense, dict(units=3, activation="tanh"), (2, 4)),
    LayerCase(layers.Dense, dict(units=2, use_bias=False, kernel_regularizer="l2"), (2, 2, 3),
              id="Dense-3d-no-bias"),
    LayerCase(layers.Activation, dict(activation="tanh"), (2, 3)),
    LayerCase(layers.Dropout, dict(rate=0.5, seed=1), (4, 5), random_in_training=True),
    LayerCase(layers.Flatten, {}, (2, 3, 2)),
    LayerCase(layers.ActivityRegularization, dict(l1=0.1, l2=0.2), (2, 3)),
    # --- normalization ---
    LayerCase(layers.BatchNormalization, dict(momentum=0.9), (4, 3),
              training_changes_output=True),
    LayerCase(layers.LayerNormalization, {}, (2, 2, 3)),
    LayerCase(layers.Normalization, dict(mean=[0.5, -1.0, 2.0], variance=[2.0, 0.5, 1.0]),
              (3, 3)),
    LayerCase(layers.Rescaling, dict(scale=[0.5, 2.0, -1.0], offset=0.25), (2, 3)),
    LayerCase(layers.UnitNormalization, {}, (2, 2, 3)),
    # --- activations (inputs standard normal: a kink is hit with probability 0) ---
    LayerCase(layers.Identity, {}, (2, 3)),
    LayerCase(layers.ReLU, {}, (2, 5)),
    LayerCase(layers.ReLU, dict(max_value=0.8, negative_slope=0.1, threshold=0.2), (3, 5),
              id="ReLU-options"),
    LayerCase(layers.LeakyReLU, dict(negative_slope=0.2), (2, 5)),
    LayerCase(layers.ELU, dict(alpha=0.7), (2, 5)),
    LayerCase(layers.PReLU, dict(alpha_initializer="random_normal", shared_axes=[1]),
              (2, 3, 4)),
    LayerCase(layers.Softmax, dict(axis=1), (2, 3, 2)),
    # --- attention (MultiHeadAttention takes (query, value): EXEMPT below) ---
    LayerCase(layers.Attention, {}, [(2, 3, 4), (2, 5, 4)]),
    LayerCase(layers.Attention, dict(use_scale=True, score_mode="concat"),
              [(2, 3, 4), (2, 5, 4)], id="Attention-scalar-weights"),
    LayerCase(layers.Attention, {}, [(2, 3, 2), (2, 4, 3), (2, 4, 2)], id="Attention-key"),
    # --- Lambda: saved as its traced graph ---
    LayerCase(layers.Lambda, dict(function=_lambda_function, arguments={"scale": 0.5}),
              (2, 3, 2)),
    # --- reshaping ---
    LayerCase(layers.Reshape, dict(target_shape=(3, -1)), (2, 2, 3)),
    LayerCase(layers.Permute, dict(dims=(2, 1)), (2, 3, 4)),
    LayerCase(layers.RepeatVector, dict(n=3), (2, 4)),
    # --- convolution ---
    LayerCase(layers.Conv1D, dict(filters=3, kernel_size=2, activation="tanh",
                                  bias_initializer="random_normal"), (2, 5, 2)),
    LayerCase(layers.Conv2D, dict(filters=3, kernel_size=2, strides=(2, 1), padding="same",
                                  activation="tanh", bias_initializer="random_normal"),
              (2, 4, 3, 2)),
    LayerCase(layers.Conv1DTranspose, dict(filters=2, kernel_size=3, strides=2, output_padding=1,
                                           activation="tanh", bias_initializer="random_normal"),
              (2, 3, 2)),
    LayerCase(layers.Conv2DTranspose, dict(filters=2, kernel_size=(2, 3), strides=(2, 1),
                                           padding="same", activation="tanh",
                                           bias_initializer="random_normal"), (2, 3, 2, 2)),
    # --- pooling ---
    LayerCase(layers.MaxPooling1D, dict(pool_size=2), (2, 6, 2),
              input_builder=distinct((2, 6, 2))),
    LayerCase(layers.MaxPooling2D, dict(pool_size=2, padding="same"), (2, 5, 4, 2),
              input_builder=distinct((2, 5, 4, 2))),
    LayerCase(layers.AveragePooling1D, dict(pool_size=3, strides=2, padding="same"), (2, 5, 2)),
    LayerCase(layers.AveragePooling2D, dict(pool_size=2), (2, 4, 4, 2)),
    LayerCase(layers.GlobalMaxPooling1D, {}, (2, 4, 3), input_builder=distinct((2, 4, 3))),
    LayerCase(layers.GlobalMaxPooling2D, {}, (2, 3, 3, 2), input_builder=distinct((2, 3, 3, 2))),
    LayerCase(layers.GlobalAveragePooling1D, {}, (2, 4, 3)),
    LayerCase(layers.GlobalAveragePooling2D, dict(keepdims=True), (2, 3, 3, 2)),
    # --- embedding, masking, recurrent ---
    LayerCase(layers.Embedding, dict(input_dim=5, output_dim=3), (2, 4),
              input_builder=token_ids((2, 4), 5), input_dtype="int32",
              differentiable_inputs=False),
    LayerCase(layers.Masking, dict(mask_value=0.0), (2, 3, 2)),
    LayerCase(layers.SimpleRNN, dict(units=2, return_sequences=True,
                                     bias_initializer="random_normal"), (2, 3, 2)),
    LayerCase(layers.LSTM, dict(units=2, bias_initializer="random_normal"), (2, 3, 2)),
    LayerCase(layers.GRU, dict(units=2, return_sequences=True, bias_initializer="random_normal"),
              (2, 3, 2)),
    LayerCase(layers.GRU, dict(units=2, reset_after=False, go_backwards=True), (2, 3, 2),
              id="GRU-reset-before-backwards"),
    LayerCase(layers.RNN, dict(cell={"class_name": "LSTMCell", "config": {"units": 2}},
                               return_sequences=True), (2, 3, 2)),
    LayerCase(layers.Bidirectional, dict(layer={"class_name": "LSTM", "config": {
        "units": 2, "return_sequences": True}}), (2, 3, 2)),
    # --- merging (called on a list of inputs; saved inside a functional model) ---
    LayerCase(layers.Concatenate, {}, [(2, 3), (2, 2)]),
    LayerCase(layers.Concatenate, dict(axis=1), [(2, 2, 3), (2, 1, 3)], id="Concatenate-axis1"),
    LayerCase(layers.Add, {}, [(2, 3), (2, 3), (2, 3)]),
    LayerCase(layers.Subtract, {}, [(2, 3), (2, 3)]),
    LayerCase(layers.Multiply, {}, [(2, 3), (2, 1)]),
    LayerCase(layers.Average, {}, [(2, 3), (2, 3)]),
    LayerCase(layers.Maximum, {}, [(2, 3), (2, 3)]),
    LayerCase(layers.Minimum, {}, [(2, 3), (2, 3), (2, 3)]),
    LayerCase(layers.Dot, dict(axes=1), [(2, 3), (2, 3)]),
    LayerCase(layers.Dot, dict(axes=(2, 2), normalize=True), [(2, 2, 3), (2, 4, 3)],
              id="Dot-normalized"),
]

# public layer classes without a case, each with the reason
EXEMPT = {
    layers.InputLayer: "declares a model's input; it computes nothing (tests/models cover it)",
    layers.SimpleRNNCell: "one step, called with (inputs, states): the battery runs cells "
                          "inside RNN (the RNN case) and SimpleRNN",
    layers.LSTMCell: "one step, called with (inputs, states): the RNN case runs it",
    layers.GRUCell: "one step, called with (inputs, states): the GRU cases run it",
    layers.MultiHeadAttention: "called as mha(query, value), not on one input or a list: "
                               "tests/layers/test_attention.py runs the same checks",
}
