"""tf.keras.models.clone_model: the same architecture with new layers and weights, ported from
Keras 3's models/cloning_test.py."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core import nest

layers, models = tf.keras.layers, tf.keras.models
clone_model = tf.keras.models.clone_model


def get_mlp_functional_model(shared_layers=False):
    inputs = layers.Input(shape=(3,))
    x = layers.Dense(2)(inputs)
    if shared_layers:
        layer = layers.Dense(2, name="shared")
        x = layer(x)
        x = layer(x)
    outputs = layers.Dense(2)(x)
    return models.Model(inputs, outputs)


def get_cnn_functional_model(shared_layers=False):
    inputs = layers.Input(shape=(7, 3))
    x = layers.Conv1D(2, 2, padding="same")(inputs)
    if shared_layers:
        layer = layers.Conv1D(2, 2, padding="same", name="shared")
        x = layer(x)
        x = layer(x)
    outputs = layers.Conv1D(2, 2, padding="same")(x)
    return models.Model(inputs, outputs)


def get_sequential_model(explicit_input=True):
    model = models.Sequential()
    if explicit_input:
        model.add(layers.Input(shape=(3,)))
    model.add(layers.Dense(2))
    model.add(layers.Dense(2))
    return model


def get_subclassed_model():
    class ExampleModel(models.Model):
        def __init__(self, **kwargs):
            super().__init__(**kwargs)
            self.d1 = layers.Dense(2)
            self.d2 = layers.Dense(2)

        def call(self, x):
            return self.d2(self.d1(x))

    return ExampleModel()


def assert_models_equal(model1, model2, ref_input):
    for r1, r2 in zip(nest.flatten(model1(ref_input)), nest.flatten(model2(ref_input))):
        np.testing.assert_allclose(r1.numpy(), r2.numpy(), rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize("model_fn, is_conv", [
    (get_mlp_functional_model, False), (get_cnn_functional_model, True),
    (get_sequential_model, False), (lambda: get_sequential_model(explicit_input=False), False),
    (get_subclassed_model, False)],
    ids=["mlp_functional", "cnn_functional", "sequential", "deferred_sequential", "subclassed"])
def test_cloning_correctness(model_fn, is_conv):
    # Keras: models/cloning_test.py::CloneModelTest::test_cloning_correctness
    ref_input = np.random.default_rng(0).random((2, 7, 3) if is_conv else (2, 3)) \
        .astype(np.float32)
    model = model_fn()
    new_model = clone_model(model)
    model(ref_input)  # Maybe needed to build the model
    new_model(ref_input)  # Maybe needed to build the model
    assert new_model is not model and type(new_model) is type(model)
    assert not any(a is b for a, b in zip(model.weights, new_model.weights))
    new_model.set_weights(model.get_weights())
    assert_models_equal(model, new_model, ref_input)


@pytest.mark.parametrize("model_fn", [get_mlp_functional_model, get_cnn_functional_model,
                                      get_sequential_model],
                         ids=["mlp_functional", "cnn_functional", "sequential"])
def test_custom_clone_function(model_fn):
    # Keras: models/cloning_test.py::CloneModelTest::test_custom_clone_function
    def clone_function(layer):
        config = layer.get_config()
        config["name"] = config["name"] + "_custom"
        return layer.__class__.from_config(config)

    model = model_fn()
    new_model = clone_model(model, clone_function=clone_function)
    compared = 0
    for l1, l2 in zip(model.layers, new_model.layers):
        if not isinstance(l1, layers.InputLayer):
            assert l2.name == l1.name + "_custom"
            compared += 1
    assert compared == 2


def test_shared_layers_cloning():
    # Keras: models/cloning_test.py::CloneModelTest::test_shared_layers_cloning
    model = get_mlp_functional_model(shared_layers=True)
    new_model = clone_model(model)
    assert len(new_model.layers) == 4
    shared = new_model.get_layer("shared")
    assert shared is not model.get_layer("shared")
    assert len(shared._inbound_nodes) == 2  # called twice, as the original: one clone


def test_structured_io_cloning():
    # Keras: models/cloning_test.py::CloneModelTest::test_structured_io_cloning
    x = layers.Input((3,))
    y = layers.Input((3,))
    z1 = layers.Add()([x, y])  # Keras writes x + y
    z2 = layers.Dense(5)(z1)
    inputs = dict(x=x, y=y)
    outputs = dict(z1=z1, z2=z2)
    model0 = models.Model(inputs, outputs)

    model = clone_model(model0)
    assert nest.structure_key(model._inputs_struct) == nest.structure_key(inputs)
    assert nest.structure_key(model._outputs_struct) == nest.structure_key(outputs)

    model = clone_model(model0, input_tensors=inputs)
    assert nest.structure_key(model._inputs_struct) == nest.structure_key(inputs)
    assert nest.structure_key(model._outputs_struct) == nest.structure_key(outputs)

    with pytest.raises(ValueError,
                       match="`input_tensors` must have the same structure as model.input"):
        clone_model(model0, input_tensors=(x, y))


def test_input_tensors_of_a_sequential_and_a_subclassed_model():
    # Keras: models/cloning.py's _clone_sequential_model / clone_model argument checks
    model = get_sequential_model()
    new_input = layers.Input(shape=(3,), name="new_input")
    clone = clone_model(model, input_tensors=[new_input])
    assert clone.built and clone.input_shape == (None, 3)
    with pytest.raises(ValueError, match="must contain a single tensor"):
        clone_model(model, input_tensors=[new_input, new_input])
    with pytest.raises(ValueError, match="must be a KerasTensor"):
        clone_model(model, input_tensors=np.zeros((1, 3)))
    with pytest.raises(ValueError, match="only supported for Sequential models or Functional"):
        clone_model(get_subclassed_model(), clone_function=lambda layer: layer)


def test_a_clone_function_that_returns_no_layer_is_named():
    with pytest.raises(ValueError, match="clone_function must return a Layer"):
        clone_model(get_mlp_functional_model(), clone_function=lambda layer: None)


def _flatten_layers(model):
    """Keras's model._flatten_layers(): the model, then its layers depth first."""
    found = [model]
    for layer in model.layers:
        found += _flatten_layers(layer) if isinstance(layer, models.Model) else [layer]
    return found


def get_nested_functional_model():
    inputs = layers.Input(shape=(4,))
    x = layers.Dense(3)(inputs)
    mlp = get_mlp_functional_model()
    x = mlp(x)
    outputs = layers.Dense(2)(x)
    return models.Model(inputs, outputs)


def get_nested_sequential_model():
    model = models.Sequential()
    model.add(layers.Dense(2))
    model.add(get_sequential_model(explicit_input=False))
    model.add(layers.Dense(2))
    return model


def add_dropout_after_dense(layer, *args, **kwargs):
    out = layer(*args, **kwargs)
    if isinstance(layer, layers.Dense):
        out = layers.Dropout(0.5)(out)
    return out


def test_call_fn():
    # Keras: models/cloning_test.py::CloneModelTest::test_call_fn
    model = get_mlp_functional_model(shared_layers=False)
    new_model = clone_model(model, clone_function=lambda x: x,  # Reuse the same layers.
                            call_function=add_dropout_after_dense)
    assert len(model.layers) == 3
    assert len(new_model.layers) == 5
    assert isinstance(new_model.layers[2], layers.Dropout)
    assert isinstance(new_model.layers[4], layers.Dropout)
    ref_input = np.random.default_rng(1).random((2, 3)).astype(np.float32)
    assert_models_equal(model, new_model, ref_input)


def test_recursive():
    # Keras: models/cloning_test.py::CloneModelTest::test_recursive
    model = get_nested_functional_model()
    new_model = clone_model(model, clone_function=lambda x: x,  # Reuse the same layers.
                            call_function=add_dropout_after_dense, recursive=True)
    assert len(_flatten_layers(model)) == 8
    assert len(_flatten_layers(new_model)) == 12
    assert isinstance(new_model.layers[3].layers[2], layers.Dropout)
    assert isinstance(new_model.layers[3].layers[4], layers.Dropout)
    ref_input = np.random.default_rng(2).random((2, 4)).astype(np.float32)
    assert_models_equal(model, new_model, ref_input)

    # Sequential.
    def clone_function(layer):
        layer = layer.__class__.from_config(layer.get_config())
        layer.flag = True
        return layer

    model = get_nested_sequential_model()
    new_model = clone_model(model, clone_function=clone_function, recursive=True)
    ref_input = np.random.default_rng(3).random((2, 3)).astype(np.float32)
    model(ref_input)  # Maybe needed to build the model
    new_model(ref_input)  # Maybe needed to build the model
    new_model.set_weights(model.get_weights())
    assert_models_equal(model, new_model, ref_input)
    dense = 0
    for l1, l2 in zip(_flatten_layers(model), _flatten_layers(new_model)):
        if isinstance(l2, layers.Dense):
            assert not hasattr(l1, "flag") and hasattr(l2, "flag")
            dense += 1
    assert dense == 4


def test_call_function_is_refused_for_a_sequential_model():
    # Keras: models/cloning.py's clone_model argument check
    with pytest.raises(ValueError, match="`call_function` argument is not supported with "
                                         "Sequential models"):
        clone_model(get_sequential_model(), call_function=add_dropout_after_dense)
