"""Keras 3's variable names: a layer weight's ``name`` is the name ``add_weight`` was given, its
``path`` the hierarchical one; a ``tf.Variable`` keeps TensorFlow's ``'v:0'``.

Ported from Keras 3 (keras-team/keras), with their values:
``keras/src/layers/layer_test.py``: ``test_custom_layer_add_weight_in_init_name``,
``test_custom_layer_add_weight_in_build_name``;
``keras/src/backend/common/variables_test.py``: ``test_variable_path_creation`` (through
``name_scope``, tapeflow's scope for layer weights).
"""
import numpy as np

import tapeflow as tf

layers = tf.keras.layers


def test_custom_layer_add_weight_in_init_name():
    tf.keras.backend.clear_session()

    class TrainingLayer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = InnerLayer()

    class InnerLayer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.var = self.add_weight(shape=(1,), name="inner")
            self.inner = InnerInnerLayer()

    class InnerInnerLayer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.var = self.add_weight(shape=(1,), name="inner")

    layer = TrainingLayer()
    layer.build(None)
    assert len(layer.variables) == 2
    variable_paths = set(v.path for v in layer.variables)
    assert "inner_layer/inner" in variable_paths
    assert "inner_inner_layer/inner" in variable_paths
    assert [v.name for v in layer.variables] == ["inner", "inner"]


def test_custom_layer_add_weight_in_build_name():
    tf.keras.backend.clear_session()

    class TrainingLayer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = InnerLayer()

        def call(self, input):
            return self.inner(input)

    class InnerLayer(layers.Layer):
        def __init__(self):
            super().__init__()
            self.inner = InnerInnerLayer()

        def build(self, _):
            self.var = self.add_weight(shape=(1,), name="inner")

        def call(self, input):
            return self.var + self.inner(input)

    class InnerInnerLayer(layers.Layer):
        def build(self, _):
            self.var = self.add_weight(shape=(1,), name="inner")

        def call(self, input):
            return self.var + input

    layer = TrainingLayer()
    output = layer(np.zeros((4, 1), np.float32))
    assert output.shape == (4, 1)
    assert len(layer.variables) == 2
    variable_paths = set(v.path for v in layer.variables)
    assert "training_layer/inner_layer/inner" in variable_paths
    assert "training_layer/inner_layer/inner_inner_layer/inner" in variable_paths
    assert [v.name for v in layer.variables] == ["inner", "inner"]


def test_variable_path_creation():
    with layers.name_scope("test_scope"):
        dense = layers.Dense(2, name="test_dense")
        dense.build((None, 3))
    assert dense.kernel.path == "test_scope/test_dense/kernel"
    assert dense.kernel.name == "kernel"


def test_tf_variables_keep_tensorflow_names():
    # TensorFlow's semantics, not Keras's: the given name with its output index
    v = tf.Variable(1.0, name="v")
    assert v.name == "v:0" and v.path == "v"
    assert tf.Variable(1.0).name == "Variable:0"
