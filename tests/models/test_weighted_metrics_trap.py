"""``sample_weight`` weights the loss and ``compile(weighted_metrics=...)``, not ``metrics``
(Keras 3's rule), traced and eagerly, with Keras 3's log names."""
import numpy as np
import pytest

import tapeflow as tf

from .helpers import regression_data, small_model

WEIGHTS = np.r_[np.zeros(20), np.linspace(0.5, 3.0, 20)].astype(np.float32)


def expected_numbers(model, x, y, w):
    """mse loss (weighted, sum over the batch size), plain mae, weighted mae: by hand."""
    error = model.predict(x, verbose=0) - y
    per_sample = np.abs(error).mean(axis=1)
    return {"loss": float(np.sum(w * (error ** 2).mean(axis=1)) / len(x)),
            "mae": float(per_sample.mean()),
            "weighted_mae": float(np.sum(w * per_sample) / np.sum(w))}


@pytest.mark.parametrize("run_eagerly", [False, True])
def test_evaluate_weights_the_loss_and_weighted_metrics_only(run_eagerly):
    x, y = regression_data(40)
    model = small_model()
    model.compile(tf.keras.optimizers.SGD(0.0), "mse", metrics=["mae"],
                  weighted_metrics=["mae"], run_eagerly=run_eagerly)
    logs = model.evaluate(x, y, sample_weight=WEIGHTS, batch_size=16, verbose=0,
                          return_dict=True)
    assert list(logs) == ["loss", "mae", "weighted_mae"] == model.metrics_names
    expected = expected_numbers(model, x, y, WEIGHTS)
    for key in expected:
        assert logs[key] == pytest.approx(expected[key], rel=1e-5), key
    assert (model.test_function is None) == run_eagerly


@pytest.mark.parametrize("run_eagerly", [False, True])
def test_fit_logs_plain_and_weighted_metrics_for_training_and_validation(run_eagerly):
    x, y = regression_data(40)
    model = small_model()
    model.compile(tf.keras.optimizers.SGD(0.0), "mse", metrics=["mae"],  # the weights stay
                  weighted_metrics=["mae"], run_eagerly=run_eagerly)
    history = model.fit(x, y, sample_weight=WEIGHTS, validation_data=(x, y, WEIGHTS),
                        batch_size=16, epochs=2, shuffle=False, verbose=0).history
    assert sorted(history) == ["loss", "mae", "val_loss", "val_mae", "val_weighted_mae",
                               "weighted_mae"]
    expected = expected_numbers(model, x, y, WEIGHTS)
    for key, value in expected.items():
        np.testing.assert_allclose(history[key], [value] * 2, rtol=1e-5, err_msg=key)
        np.testing.assert_allclose(history[f"val_{key}"], [value] * 2, rtol=1e-5, err_msg=key)
    assert (model.train_function is None) == run_eagerly


def test_a_weighted_metric_alone_keeps_its_name():
    x, y = regression_data(40)
    model = small_model(optimizer=tf.keras.optimizers.SGD(0.0))
    model.compile(tf.keras.optimizers.SGD(0.0), "mse", weighted_metrics=["mae"])
    history = model.fit(x, y, sample_weight=WEIGHTS, batch_size=40, verbose=0).history
    assert sorted(history) == ["loss", "mae"]
    assert history["mae"][0] == pytest.approx(expected_numbers(model, x, y, WEIGHTS)
                                              ["weighted_mae"], rel=1e-5)


def test_plain_metrics_ignore_sample_weight():
    x, y = regression_data(40, seed=3)
    model = small_model(metrics=["mae"])
    plain = model.evaluate(x, y, verbose=0, return_dict=True)
    weighted = model.evaluate(x, y, sample_weight=WEIGHTS, verbose=0, return_dict=True)
    assert weighted["mae"] == pytest.approx(plain["mae"], rel=1e-6)
    assert weighted["loss"] != pytest.approx(plain["loss"], rel=1e-3)


def test_log_names_follow_keras_3():
    model = small_model()
    mse = tf.keras.metrics.MeanSquaredError()
    model.compile("sgd", "mse", metrics=["mae", "mae", mse],
                  weighted_metrics=["mae", "mae", "rmse", tf.keras.metrics.MeanSquaredError()])
    assert model.metrics_names == [
        "loss", "mae", "mae_1", "mean_squared_error",
        "weighted_mae", "weighted_mae_1", "rmse", "weighted_mean_squared_error"]
    x, y = regression_data(16)
    logs = model.evaluate(x, y, sample_weight=np.ones(16, np.float32), verbose=0,
                          return_dict=True)
    assert list(logs) == model.metrics_names
    assert mse.name == "mean_squared_error"  # the user's metric keeps its own name


@pytest.mark.parametrize("run_eagerly", [False, True])
def test_weighted_accuracy_is_chosen_from_the_data_as_plain_accuracy_is(run_eagerly):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(30, 4)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.float32)[:, None]
    w = np.r_[np.zeros(15), np.ones(15)].astype(np.float32)
    tf.random.set_seed(2)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                                 tf.keras.layers.Dense(1, activation="sigmoid")])
    model.compile("sgd", "binary_crossentropy", metrics=["accuracy"],
                  weighted_metrics=["accuracy"], run_eagerly=run_eagerly)
    logs = model.evaluate(x, y, sample_weight=w, verbose=0, return_dict=True)
    hits = ((model.predict(x, verbose=0) > 0.5) == (y > 0.5))[:, 0]
    assert logs["accuracy"] == pytest.approx(hits.mean())
    assert logs["weighted_accuracy"] == pytest.approx(hits[15:].mean())
    assert [type(m).__name__ for m in model.metrics[1:]] == ["BinaryAccuracy"] * 2
