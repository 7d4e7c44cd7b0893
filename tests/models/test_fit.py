"""compile / fit / evaluate / predict as a Keras user drives them."""
import numpy as np
import pytest

import tapeflow as tf

from .helpers import Recorder, assert_same_weights, regression_data, small_model, weights_differ

Dense = tf.keras.layers.Dense


# --- compile --------------------------------------------------------------------------------------
def test_compile_with_strings_logs_keras_names():
    x, y = regression_data(64)
    model = small_model(optimizer="adam", loss="mse", metrics=["mae"])
    assert isinstance(model.optimizer, tf.keras.optimizers.Adam)
    history = model.fit(x, y, epochs=3, validation_split=0.25, verbose=0)
    assert isinstance(history, tf.keras.callbacks.History) and model.history is history
    assert set(history.history) == {"loss", "mae", "val_loss", "val_mae"}
    assert all(len(v) == 3 for v in history.history.values())
    assert all(isinstance(v, float) for vs in history.history.values() for v in vs)
    assert history.epoch == [0, 1, 2]
    assert model.metrics_names == ["loss", "mae"]


def test_compile_with_objects():
    x, y = regression_data(64)
    model = small_model(optimizer=tf.keras.optimizers.SGD(learning_rate=0.05),
                        loss=tf.keras.losses.MeanSquaredError(),
                        metrics=[tf.keras.metrics.MeanAbsoluteError(),
                                 tf.keras.metrics.RootMeanSquaredError()])
    history = model.fit(x, y, epochs=2, verbose=0)
    assert set(history.history) == {"loss", "mean_absolute_error", "root_mean_squared_error"}
    # with plain MSE and no regularizers, the rmse metric is the square root of the loss's
    # sample mean; both are accumulated over the epoch's batches
    loss, mae, rmse = model.evaluate(x, y, verbose=0, batch_size=1000)
    assert rmse == pytest.approx(np.sqrt(loss), rel=1e-5)


def test_compile_with_a_loss_function_and_metric_function():
    x, y = regression_data(32)
    model = small_model(loss=tf.keras.losses.mean_squared_error,
                        metrics=[tf.keras.losses.mean_absolute_error])
    logs = model.evaluate(x, y, verbose=0, return_dict=True)
    pred = model.predict(x, verbose=0)
    assert logs["loss"] == pytest.approx(float(np.mean((pred - y) ** 2)), rel=1e-5)
    assert logs["mean_absolute_error"] == pytest.approx(float(np.mean(np.abs(pred - y))), rel=1e-5)


def test_accuracy_string_picks_binary_accuracy_for_one_sigmoid_output():
    x, _ = regression_data(64)
    y = (x[:, :1] > 0).astype(np.float32)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(1, activation="sigmoid")])
    model.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    history = model.fit(x, y, epochs=2, verbose=0)
    assert set(history.history) == {"loss", "accuracy"}
    acc = model.evaluate(x, y, verbose=0, return_dict=True)["accuracy"]
    pred = model.predict(x, verbose=0)
    assert acc == pytest.approx(float(np.mean((pred > 0.5) == (y > 0.5))))


def test_sparse_labels_with_accuracy():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 4)).astype(np.float32)
    labels = np.argmax(x[:, :3], axis=1)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(3)])
    model.compile(tf.keras.optimizers.Adam(0.05),
                  tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["acc"])
    history = model.fit(x, labels, epochs=15, batch_size=20, verbose=0)
    assert history.history["acc"][-1] > 0.8
    pred = model.predict(x, verbose=0)
    acc = model.evaluate(x, labels, verbose=0)[1]
    assert acc == pytest.approx(float(np.mean(np.argmax(pred, 1) == labels)))


# --- fit -----------------------------------------------------------------------------------------
def test_fit_reduces_the_loss():
    x, y = regression_data(128)
    model = small_model(optimizer=tf.keras.optimizers.Adam(0.05))
    history = model.fit(x, y, epochs=20, batch_size=32, verbose=0)
    assert history.history["loss"][-1] < 0.2 * history.history["loss"][0]


def test_validation_split_holds_out_the_last_samples():
    x, y = regression_data(40)
    model = small_model()
    rec = Recorder()
    history = model.fit(x, y, epochs=1, batch_size=10, validation_split=0.25, verbose=0,
                        callbacks=[rec])
    assert rec.batches == [3]  # 30 training samples
    # the validation loss is the loss of the last 10 samples, with the trained weights
    assert history.history["val_loss"][0] == pytest.approx(
        model.evaluate(x[30:], y[30:], verbose=0), rel=1e-6)
    assert history.history["val_loss"][0] != pytest.approx(
        model.evaluate(x[:10], y[:10], verbose=0), rel=1e-3)


def test_validation_data_and_validation_freq():
    x, y = regression_data(48)
    model = small_model(metrics=["mae"])
    history = model.fit(x[:32], y[:32], epochs=4, validation_data=(x[32:], y[32:]),
                        validation_freq=2, verbose=0)
    # validation runs every other epoch; the logged lists hold the epochs that had it
    assert len(history.history["loss"]) == 4
    assert len(history.history["val_loss"]) == 2
    assert history.history["val_loss"][-1] == pytest.approx(
        model.evaluate(x[32:], y[32:], verbose=0)[0], rel=1e-6)


def test_shuffle_false_is_deterministic():
    x, y = regression_data(64)
    runs = []
    for global_seed in (1, 2):
        model = small_model(seed=3)
        tf.random.set_seed(global_seed)  # only the shuffling could depend on it
        history = model.fit(x, y, epochs=3, batch_size=8, shuffle=False, verbose=0)
        runs.append((history.history, model.get_weights()))
    assert runs[0][0] == runs[1][0]
    assert_same_weights(runs[0][1], runs[1][1])


def test_shuffle_true_uses_the_global_seed():
    x, y = regression_data(64)
    runs = []
    for global_seed in (1, 1, 2):
        model = small_model(seed=3)
        tf.random.set_seed(global_seed)
        model.fit(x, y, epochs=2, batch_size=8, verbose=0)
        runs.append(model.get_weights())
    assert_same_weights(runs[0], runs[1])
    assert weights_differ(runs[0], runs[2])


def test_set_seed_makes_a_whole_run_reproducible():
    x, y = regression_data(64)

    def run():
        tf.random.set_seed(42)
        model = tf.keras.Sequential([tf.keras.Input(shape=(4,)), Dense(16, activation="relu"),
                                     tf.keras.layers.Dropout(0.3), Dense(1)])
        model.compile("adam", "mse", metrics=["mae"])
        history = model.fit(x, y, epochs=3, batch_size=16, validation_split=0.25, verbose=0)
        return history.history, model.get_weights()

    (h1, w1), (h2, w2) = run(), run()
    assert h1 == h2
    assert_same_weights(w1, w2)


def test_sample_weight_zero_ignores_samples():
    x, y = regression_data(32)
    weights = np.r_[np.ones(16), np.zeros(16)].astype(np.float32)
    results = []
    for garbage in (0.0, 1e6):
        y_bad = y.copy()
        y_bad[16:] = garbage  # zero-weighted targets must not matter
        model = small_model(seed=5)
        model.fit(x, y_bad, sample_weight=weights, epochs=2, batch_size=8, shuffle=False,
                  verbose=0)
        results.append(model.get_weights())
    assert_same_weights(results[0], results[1])


def test_sample_weight_scales_the_loss_as_keras():
    x, y = regression_data(40)
    model = small_model()
    pred = model.predict(x, verbose=0)
    w = np.linspace(0, 2, 40).astype(np.float32)
    per_sample = np.mean((pred - y) ** 2, axis=1)
    # "sum_over_batch_size": sum(w * loss) / number of samples
    expected = float(np.sum(w * per_sample) / 40)
    assert model.evaluate(x, y, sample_weight=w, batch_size=1000, verbose=0) == \
        pytest.approx(expected, rel=1e-5)
    assert model.evaluate(x, y, sample_weight=w, batch_size=7, verbose=0) == \
        pytest.approx(expected, rel=1e-5)


def test_batch_size_larger_than_data_is_one_full_batch():
    x, y = regression_data(20)
    model = small_model()
    initial = model.evaluate(x, y, batch_size=20, verbose=0)
    rec = Recorder()
    history = model.fit(x, y, batch_size=1000, epochs=2, verbose=0, callbacks=[rec])
    assert rec.batches == [1, 1]
    # the logged loss is the loss of the whole batch, before its update
    assert history.history["loss"][0] == pytest.approx(initial, rel=1e-6)


def test_epoch_loss_weights_a_short_last_batch_by_its_size():
    x, y = regression_data(33)
    model = small_model(optimizer=tf.keras.optimizers.SGD(0.0))  # the weights stay put
    history = model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    assert history.history["loss"][0] == pytest.approx(
        model.evaluate(x, y, batch_size=1000, verbose=0), rel=1e-5)


def test_initial_epoch_and_zero_epochs():
    x, y = regression_data(16)
    model = small_model()
    history = model.fit(x, y, epochs=3, initial_epoch=1, verbose=0)
    assert history.epoch == [1, 2]
    before = model.get_weights()
    assert model.fit(x, y, epochs=0, verbose=0).history == {}
    assert_same_weights(before, model.get_weights())


def test_integer_features_and_python_lists():
    model = small_model()
    x = [[1, 2, 3, 4], [0, 1, 0, 1], [2, 2, 2, 2]]
    y = [[1.0], [0.0], [2.0]]
    history = model.fit(x, y, epochs=1, verbose=0)
    assert np.isfinite(history.history["loss"][0])


# --- evaluate and predict -----------------------------------------------------------------------
def test_evaluate_returns_float_list_or_dict():
    x, y = regression_data(40)
    plain = small_model()
    loss = plain.evaluate(x, y, verbose=0)
    assert isinstance(loss, float)
    pred = plain.predict(x, verbose=0)
    assert loss == pytest.approx(float(np.mean((pred - y) ** 2)), rel=1e-5)

    with_metrics = small_model(metrics=["mae"])
    values = with_metrics.evaluate(x, y, verbose=0)
    assert isinstance(values, list) and len(values) == 2
    assert values[0] == pytest.approx(loss, rel=1e-6)
    assert values[1] == pytest.approx(float(np.mean(np.abs(pred - y))), rel=1e-5)
    logs = with_metrics.evaluate(x, y, verbose=0, return_dict=True)
    assert logs == {"loss": values[0], "mae": values[1]}


def test_evaluate_does_not_depend_on_batch_size():
    x, y = regression_data(50)
    model = small_model(metrics=["mae"])
    a = model.evaluate(x, y, batch_size=50, verbose=0)
    b = model.evaluate(x, y, batch_size=7, verbose=0)
    np.testing.assert_allclose(a, b, rtol=1e-5)


def test_evaluate_does_not_train():
    x, y = regression_data(20)
    model = small_model()
    before = model.get_weights()
    model.evaluate(x, y, verbose=0)
    assert_same_weights(before, model.get_weights())


# --- custom training ------------------------------------------------------------------------------
class CountingModel(tf.keras.Model):
    """Keras's "customize what happens in fit" pattern."""

    def __init__(self):
        super().__init__()
        self.dense = Dense(1)
        self.steps = 0
        self.batch_lengths = []

    def call(self, inputs, training=None):
        return self.dense(inputs)

    def train_step(self, data):
        x, y = data  # Keras passes (x, y) when there are no sample weights
        self.steps += 1
        self.batch_lengths.append(x.shape[0])
        with tf.GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(y=y, y_pred=y_pred)
        grads = tape.gradient(loss, self.trainable_variables)
        self.optimizer.apply_gradients(zip(grads, self.trainable_variables))
        for metric in self.metrics:
            if metric.name == "loss":
                metric.update_state(loss)
            else:
                metric.update_state(y, y_pred)
        return {m.name: m.result() for m in self.metrics}


def test_overridden_train_step_is_used_by_fit():
    x, y = regression_data(40)
    tf.random.set_seed(0)
    model = CountingModel()
    # run_eagerly: the Python counter runs at every step (traced, it runs when tracing only;
    # tests/models/test_traced_fit.py checks the traced form of this model)
    model.compile(tf.keras.optimizers.SGD(0.1), "mse", metrics=["mae"], run_eagerly=True)
    history = model.fit(x, y, epochs=3, batch_size=16, verbose=0)
    assert model.steps == 9
    assert model.batch_lengths[:3] == [16, 16, 8]
    assert set(history.history) == {"loss", "mae"}
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_train_step_gets_sample_weight_as_third_element():
    seen = []

    class Peek(tf.keras.Sequential):
        def train_step(self, data):
            seen.append(len(data))
            return super().train_step(data)

    x, y = regression_data(8)
    model = Peek([tf.keras.Input(shape=(4,)), Dense(1)])
    model.compile("sgd", "mse")
    model.fit(x, y, verbose=0)
    model.fit(x, y, sample_weight=np.ones(8, np.float32), verbose=0)
    assert seen == [2, 3]


def test_train_step_may_log_non_scalars(capsys):
    class PerColumn(tf.keras.Sequential):
        def train_step(self, data):
            logs = super().train_step(data)
            x, y = data
            return {**logs, "column_means": tf.reduce_mean(y, axis=0)}

    x, y = regression_data(16)
    model = PerColumn([tf.keras.Input(shape=(4,)), Dense(1)])
    model.compile("sgd", "mse")
    history = model.fit(x, y, epochs=2, verbose=1, callbacks=[Recorder()])
    assert isinstance(history.history["loss"][0], float)
    assert np.shape(history.history["column_means"][0]) == (1,)  # a vector of one stays one
    np.testing.assert_allclose(np.asarray(history.history["column_means"][0]), y.mean(0),
                               rtol=1e-6)
    assert capsys.readouterr().out.count("column_means") == 2


def test_gradient_tape_loop_trains_as_fit_does():
    x, y = regression_data(40)
    by_fit = small_model(seed=7, optimizer=tf.keras.optimizers.SGD(0.05))
    by_fit.fit(x, y, epochs=2, batch_size=8, shuffle=False, verbose=0)

    by_hand = small_model(seed=7, compile=False)
    optimizer = tf.keras.optimizers.SGD(0.05)
    loss_fn = tf.keras.losses.MeanSquaredError()
    for _ in range(2):
        for start in range(0, 40, 8):
            xb, yb = x[start:start + 8], y[start:start + 8]
            with tf.GradientTape() as tape:
                loss = loss_fn(yb, by_hand(xb, training=True))
            grads = tape.gradient(loss, by_hand.trainable_variables)
            optimizer.apply_gradients(zip(grads, by_hand.trainable_variables))
    for a, b in zip(by_fit.get_weights(), by_hand.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-6, atol=1e-7)


def test_regularization_losses_are_added():
    x, y = regression_data(16)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                                 Dense(1, kernel_regularizer=tf.keras.regularizers.L2(0.5))])
    model.compile("sgd", "mse")
    kernel = model.get_weights()[0]
    pred = model.predict(x, verbose=0)
    expected = float(np.mean((pred - y) ** 2) + 0.5 * np.sum(kernel ** 2))
    assert model.evaluate(x, y, batch_size=16, verbose=0) == pytest.approx(expected, rel=1e-5)


def test_california_housing_regression():
    datasets = pytest.importorskip("sklearn.datasets")
    try:
        data = datasets.fetch_california_housing(download_if_missing=False)
    except OSError:
        pytest.skip("California housing data not available offline")
    rows = np.random.default_rng(0).permutation(len(data.target))[:3000]  # the file is sorted
    x = data.data[rows].astype(np.float32)
    y = data.target[rows].astype(np.float32)[:, None]
    x = (x - x.mean(0)) / x.std(0)
    tf.random.set_seed(0)
    model = tf.keras.Sequential([Dense(30, activation="relu", input_shape=(8,)), Dense(1)])
    model.compile(tf.keras.optimizers.Adam(0.01), "mse", metrics=["mae"])
    history = model.fit(x, y, epochs=8, batch_size=64, validation_split=0.2, verbose=0)
    baseline = float(np.mean((y[2400:] - y[:2400].mean()) ** 2))  # predicting the mean
    assert history.history["val_loss"][-1] < 0.45 * baseline
    assert history.history["loss"][-1] < history.history["loss"][0]
