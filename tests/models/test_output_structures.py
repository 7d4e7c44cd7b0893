"""How compile's losses and fit's targets meet a functional model's outputs, as Keras 3 pairs
them: a one-output model's loss, metrics, ``y`` and ``x`` in a list of one or a dict keyed by
its output's (input's) name, and a model whose own ``compute_loss`` makes a prediction per
loss taking a list of losses that is not one per output.

Ported from Keras 3 (keras-team/keras) ``keras/src/models/model_test.py`` with their values:
``test_functional_single_output`` (all twelve cases),
``test_functional_list_outputs_list_losses`` and ``..._abbr`` (their ``loss_weights`` list) and
``test_functional_list_outputs_with_custom_compute_loss``; the dict-style fit of
``keras/src/models/functional_test.py::test_dict_input_to_list_model`` on one output.
"""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.models.functional import Functional

keras = tf.keras
layers = keras.layers
Input, Model = keras.Input, keras.Model

RNG = np.random.default_rng(0)
X = RNG.random((8, 3))
Y1 = RNG.random((8, 1))
Y2 = RNG.integers(0, 2, (8, 1))


def _get_model_single_output():
    x = Input(shape=(3,), name="input_a")
    output_a = layers.Dense(1, name="output_a")(x)
    return Model(x, output_a)


def _get_model_single_output_list():
    x = Input(shape=(3,), name="input_a")
    output_a = layers.Dense(1, name="output_a")(x)
    return Model(x, [output_a])


def _get_model_single_output_dict():
    x = Input(shape=(3,), name="input_a")
    output_a = layers.Dense(1, name="output_a")(x)
    return Model(x, {"output_a": output_a})


def _get_model_multi_outputs_list():
    x = Input(shape=(3,), name="input_a")
    output_a = layers.Dense(1, name="output_a")(x)
    output_b = layers.Dense(1, name="output_b", activation="sigmoid")(x)
    return Model(x, [output_a, output_b])


class MyModel(Model):
    # model_test.py::_get_model_with_custom_compute_loss
    def __init__(self):
        inputs = Input(shape=(3,), name="inputs")
        outputs = layers.Dense(1, name="a")(inputs)
        super().__init__(inputs=inputs, outputs=outputs)

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, **kwargs):
        y_pred = [y_pred, y_pred]  # To list
        return super().compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                    **kwargs)


SINGLE_OUTPUT_MODELS = [_get_model_single_output, _get_model_single_output_list,
                        _get_model_single_output_dict]


@pytest.mark.parametrize("model_fn", SINGLE_OUTPUT_MODELS)
@pytest.mark.parametrize("loss_type", [None, "list", "dict", "dict_list"])
def test_functional_single_output(model_fn, loss_type):
    # Keras: model_test.py::ModelTest::test_functional_single_output
    model = model_fn()
    assert isinstance(model, Functional)
    loss = "mean_squared_error"
    if loss_type == "list":
        loss = [loss]
    elif loss_type == "dict":
        loss = {"output_a": loss}
    elif loss_type == "dict_list":
        loss = {"output_a": [loss]}
    model.compile(optimizer="sgd", loss=loss,
                  metrics={"output_a": ["mean_squared_error", "mean_absolute_error"]},
                  weighted_metrics={"output_a": "mean_squared_error"})
    # Fit the model to make sure compile_metrics are built
    hist = model.fit(X, Y1, batch_size=2, epochs=1, verbose=0)
    assert sorted(hist.history) == sorted(["loss", "mean_absolute_error", "mean_squared_error",
                                           "weighted_mean_squared_error"])


@pytest.mark.filterwarnings("ignore:.*triggered tf.function retracing:UserWarning")
@pytest.mark.parametrize("model_fn", SINGLE_OUTPUT_MODELS)
def test_targets_and_inputs_by_name_are_the_arrays_themselves(model_fn):
    # (each structure of x and y is a trace of its own, as in TensorFlow: hence the warning)
    # Keras: functional_test.py::test_dict_input_to_list_model (its dict-style fit and
    # evaluate, on one input and one output)
    model = model_fn()
    model.compile(optimizer="sgd", loss="mean_squared_error", metrics=["mae"])
    plain = model.evaluate(X, Y1, batch_size=4, verbose=0, return_dict=True)
    for x, y in [(X, {"output_a": Y1}), ({"input_a": X}, {"output_a": Y1}), ([X], [Y1])]:
        assert model.evaluate(x, y, batch_size=4, verbose=0, return_dict=True) == plain
    weights = np.linspace(0.0, 1.0, 8)
    assert model.evaluate(X, {"output_a": Y1}, sample_weight={"output_a": weights},
                          batch_size=4, verbose=0) == \
        model.evaluate(X, Y1, sample_weight=weights, batch_size=4, verbose=0)
    history = model.fit({"input_a": X}, {"output_a": Y1}, batch_size=2, epochs=1, verbose=0)
    assert sorted(history.history) == ["loss", "mae"]


def test_targets_keyed_by_another_name_are_refused_naming_the_output():
    model = _get_model_single_output()
    model.compile(optimizer="sgd", loss="mean_squared_error")
    with pytest.raises(ValueError, match=r"\['output_b'\] are not outputs of the model; its "
                                         r"outputs are \['output_a'\]"):
        model.fit(X, {"output_b": Y1}, verbose=0)


@pytest.mark.parametrize("loss, metrics, ref_keys", [
    (["mean_squared_error", "binary_crossentropy"],
     ["mean_squared_error", ["mean_squared_error", "accuracy"]],
     ["loss", "output_a_loss", "output_a_mean_squared_error", "output_b_accuracy",
      "output_b_loss", "output_b_mean_squared_error"]),
    (["mse", "bce"], [["bce", "mse", "mae"], ["mse", "acc"]],
     ["loss", "output_a_loss", "output_a_bce", "output_a_mae", "output_a_mse", "output_b_acc",
      "output_b_loss", "output_b_mse"]),
], ids=["list_losses", "list_losses_abbr"])
def test_functional_list_outputs_list_losses(loss, metrics, ref_keys):
    # Keras: model_test.py::ModelTest::test_functional_list_outputs_list_losses and
    # test_functional_list_outputs_list_losses_abbr
    model = _get_model_multi_outputs_list()
    assert isinstance(model, Functional)
    model.compile(optimizer="sgd", loss=loss, metrics=metrics, loss_weights=[0.1, 2])
    # Fit the model to make sure compile_metrics are built
    hist = model.fit(X, (Y1, Y2), batch_size=2, epochs=1, verbose=0)
    assert sorted(hist.history) == sorted(ref_keys)
    logs = model.evaluate(X, (Y1, Y2), batch_size=8, verbose=0, return_dict=True)
    np.testing.assert_allclose(logs["loss"], 0.1 * logs["output_a_loss"] +
                               2 * logs["output_b_loss"], rtol=1e-5)


def test_functional_list_outputs_with_custom_compute_loss():
    # Keras: model_test.py::ModelTest::test_functional_list_outputs_with_custom_compute_loss
    model = MyModel()
    assert isinstance(model, Functional)
    # `model` has 1 output, but in `compute_loss` it is separated into 2.
    assert len(model.outputs) == 1
    model.compile(optimizer="sgd", loss=["mean_squared_error", "binary_crossentropy"])
    hist = model.fit(X, (Y1, Y2), batch_size=2, epochs=1, verbose=0)
    assert sorted(hist.history) == sorted(["binary_crossentropy_loss", "loss",
                                           "mean_squared_error_loss"])


def test_each_loss_of_a_custom_compute_loss_is_logged_as_it_computed_it():
    model = MyModel()
    model.compile(optimizer="sgd", loss=["mean_squared_error", "binary_crossentropy"],
                  loss_weights=[2.0, 0.5])
    logs = model.evaluate(X, (Y1, Y2), batch_size=8, verbose=0, return_dict=True)
    pred = model.predict(X, verbose=0).astype(np.float32)
    mse = np.mean((pred - Y1) ** 2)
    p = np.clip(pred, 1e-7, 1 - 1e-7)
    bce = -np.mean(Y2 * np.log(p) + (1 - Y2) * np.log(1 - p))
    np.testing.assert_allclose(logs["mean_squared_error_loss"], mse, rtol=1e-5)
    np.testing.assert_allclose(logs["binary_crossentropy_loss"], bce, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], 2.0 * mse + 0.5 * bce, rtol=1e-5)


def test_a_custom_compute_loss_model_keeps_its_losses_through_a_save(tmp_path):
    model = MyModel()
    model.compile(optimizer="sgd", loss=["mean_squared_error", "binary_crossentropy"])
    model.fit(X, (Y1, Y2), batch_size=4, epochs=1, verbose=0)
    path = str(tmp_path / "custom_loss.keras")
    model.save(path)
    loaded = keras.models.load_model(path, custom_objects={"MyModel": MyModel})
    assert isinstance(loaded, MyModel)
    assert loaded.evaluate(X, (Y1, Y2), batch_size=8, verbose=0, return_dict=True) == \
        model.evaluate(X, (Y1, Y2), batch_size=8, verbose=0, return_dict=True)


def test_several_losses_for_one_output_need_a_compute_loss_that_makes_them_predictions():
    with pytest.raises(ValueError, match="2 losses for the model's one output.*override "
                                         "compute_loss"):
        _get_model_single_output().compile(optimizer="sgd", loss=["mse", "mae"])
