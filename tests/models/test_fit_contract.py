"""The rest of fit's contract: Python generators and PyDatasets as data, the *_on_batch
methods, get_layer, Dense(input_dim=...) and summary() of a subclassed model."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.ops import random as random_ops

from .helpers import assert_same_weights, regression_data, small_model, weights_differ

X, Y = regression_data(64)
W = np.linspace(0.5, 2.0, 64).astype(np.float32)


def batches_of(n=16, weights=False, forever=True):
    """The batches fit(X, Y, batch_size=n, shuffle=False) makes, as a generator."""
    while True:
        for i in range(0, len(X), n):
            yield (X[i:i + n], Y[i:i + n]) + ((W[i:i + n],) if weights else ())
        if not forever:
            return


class Batches(tf.keras.utils.PyDataset):
    """X, Y in batches of 16, recording the indices read and the epochs ended."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.read, self.ends = [], 0

    def __len__(self):
        return 4

    def __getitem__(self, index):
        self.read.append(index)
        return X[index * 16:(index + 1) * 16], Y[index * 16:(index + 1) * 16]

    def on_epoch_end(self):
        self.ends += 1


# --- generators -------------------------------------------------------------------------------------
def test_fit_on_a_generator_equals_fit_on_the_arrays_unshuffled():
    by_arrays, by_generator = small_model(), small_model()
    by_arrays.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    history = by_generator.fit(batches_of(), steps_per_epoch=4, epochs=3, verbose=0)
    assert_same_weights(by_arrays, by_generator)
    assert len(history.history["loss"]) == 3


def test_generator_of_sample_weights_weights_the_loss():
    by_arrays, by_generator, unweighted = small_model(), small_model(), small_model()
    by_arrays.fit(X, Y, sample_weight=W, batch_size=16, epochs=2, shuffle=False, verbose=0)
    by_generator.fit(batches_of(weights=True), steps_per_epoch=4, epochs=2, verbose=0)
    unweighted.fit(batches_of(), steps_per_epoch=4, epochs=2, verbose=0)
    assert_same_weights(by_arrays, by_generator)
    assert weights_differ(unweighted.get_weights(), by_generator.get_weights())


def test_generator_validation_evaluate_and_predict():
    model = small_model()
    history = model.fit(batches_of(), steps_per_epoch=4, epochs=2, verbose=0,
                        validation_data=batches_of(), validation_steps=4)
    np.testing.assert_allclose(history.history["val_loss"][-1],
                               model.evaluate(X, Y, batch_size=16, verbose=0), rtol=1e-6)
    assert model.evaluate(batches_of(), steps=4, verbose=0) == pytest.approx(
        model.evaluate(X, Y, batch_size=16, verbose=0), rel=1e-6)
    np.testing.assert_array_equal(model.predict(batches_of(), steps=4), model.predict(X))
    # a finite generator without steps: read to its end
    assert model.evaluate(batches_of(forever=False), verbose=0) == pytest.approx(
        model.evaluate(X, Y, verbose=0), rel=1e-6)
    np.testing.assert_array_equal(model.predict(batches_of(forever=False)), model.predict(X))


def test_one_epoch_on_a_finite_generator_needs_no_steps():
    by_arrays, by_generator = small_model(), small_model()
    by_arrays.fit(X, Y, batch_size=16, shuffle=False, verbose=0)
    by_generator.fit(batches_of(forever=False), verbose=0)
    assert_same_weights(by_arrays, by_generator)


def test_generator_errors_say_the_fix():
    model = small_model()
    with pytest.raises(ValueError, match="read only once.*pass steps_per_epoch"):
        model.fit(batches_of(), epochs=2, verbose=0)
    with pytest.raises(ValueError, match="validation_data is a generator.*validation_steps"):
        model.fit(batches_of(), steps_per_epoch=4, epochs=2, verbose=0,
                  validation_data=batches_of())
    with pytest.raises(ValueError, match=r"ran dry after 0 of 4 steps .*\(4 batches in all\)"):
        model.fit(batches_of(forever=False), steps_per_epoch=4, epochs=3, verbose=0)
    with pytest.raises(ValueError, match="gave no batches"):
        model.fit(iter([]), verbose=0)
    with pytest.raises(ValueError, match="yields its own batches.*do not also pass y"):
        model.fit(batches_of(), Y, steps_per_epoch=4, verbose=0)
    with pytest.raises(ValueError, match="steps must be a positive integer"):
        model.fit(batches_of(), steps_per_epoch=0, verbose=0)
    with pytest.raises(ValueError, match=r"x, \(x, y\) or \(x, y, sample_weight\)"):
        model.fit(iter([(X, Y, W, W)]), verbose=0)
    with pytest.raises(ValueError, match="labels y are strings"):
        model.fit(iter([(X[:4], np.array(["a", "b", "a", "b"]))]), verbose=0)
    with pytest.raises(ValueError, match="x has 4 samples but y has 3"):
        model.fit(iter([(X[:4], Y[:3])]), verbose=0)


# --- PyDataset -------------------------------------------------------------------------------------
def test_fit_on_a_pydataset_equals_fit_on_the_arrays_unshuffled():
    by_arrays, by_dataset = small_model(), small_model()
    by_arrays.fit(X, Y, batch_size=16, epochs=3, shuffle=False, verbose=0)
    data = Batches(workers=4, use_multiprocessing=True, max_queue_size=2)  # accepted
    by_dataset.fit(data, epochs=3, shuffle=False, verbose=0, validation_data=Batches())
    assert_same_weights(by_arrays, by_dataset)
    assert data.ends == 3 and data.read == [0, 1, 2, 3] * 3
    assert (data.workers, data.use_multiprocessing, data.max_queue_size) == (4, True, 2)
    assert tf.keras.utils.Sequence is tf.keras.utils.PyDataset


def test_pydataset_is_shuffled_by_batch_each_epoch_from_the_seed():
    def order(seed):
        data = Batches()
        small_model(seed=seed).fit(data, epochs=3, verbose=0)
        return data.read
    first = order(1)
    assert [sorted(first[i:i + 4]) for i in (0, 4, 8)] == [[0, 1, 2, 3]] * 3
    assert first[:4] != first[4:8] or first[4:8] != first[8:]
    assert order(1) == first


def test_pydataset_steps_class_weight_and_errors():
    data = Batches()
    model = small_model()
    model.fit(data, epochs=2, steps_per_epoch=2, shuffle=False, verbose=0)
    assert data.read == [0, 1, 0, 1]
    assert model.evaluate(Batches(), verbose=0) == pytest.approx(
        model.evaluate(X, Y, batch_size=16, verbose=0), rel=1e-6)
    with pytest.raises(ValueError, match="steps=5 is more than the 4 batches"):
        model.fit(Batches(), steps_per_epoch=5, verbose=0)

    class Endless(tf.keras.utils.PyDataset):  # no super().__init__(), no __len__
        def __getitem__(self, index):
            return X[:8], Y[:8]
    with pytest.raises(ValueError, match="has no __len__.*pass steps_per_epoch"):
        model.fit(Endless(), verbose=0)
    model.fit(Endless(), steps_per_epoch=3, verbose=0)
    assert Endless().workers == 1

    labels = (X[:, :1] > 0).astype(np.float32)

    class Labelled(Batches):
        def __getitem__(self, index):
            return X[index * 16:(index + 1) * 16], labels[index * 16:(index + 1) * 16]
    weighted = {0: 1.0, 1: 4.0}
    a, b = small_model(loss="binary_crossentropy"), small_model(loss="binary_crossentropy")
    a.fit(X, labels, class_weight=weighted, batch_size=16, shuffle=False, verbose=0)
    b.fit(Labelled(), class_weight=weighted, shuffle=False, verbose=0)
    assert_same_weights(a, b)


# --- *_on_batch ------------------------------------------------------------------------------------
def test_train_on_batch_is_one_fit_step_with_the_traced_step():
    by_fit, by_batch = small_model(metrics=["mae"]), small_model(metrics=["mae"])
    by_fit.fit(X[:16], Y[:16], batch_size=16, shuffle=False, verbose=0)
    logs = by_batch.train_on_batch(X[:16], Y[:16], return_dict=True)
    assert_same_weights(by_fit, by_batch)
    assert set(logs) == {"loss", "mae"} and all(isinstance(v, float) for v in logs.values())
    assert by_batch.train_function is not None  # fit's traced step, not an eager one
    loss, mae = by_batch.train_on_batch(X[16:32], Y[16:32])
    assert isinstance(loss, float) and isinstance(mae, float)


def test_on_batch_metrics_accumulate_until_reset_as_keras_3():
    model = small_model()
    first = model.test_on_batch(X[:16], Y[:16])
    second = model.test_on_batch(X[16:32], Y[16:32])
    both = model.evaluate(X[:32], Y[:32], batch_size=32, verbose=0)
    assert second == pytest.approx(both, rel=1e-6)
    model.reset_metrics()
    assert model.test_on_batch(X[:16], Y[:16]) == pytest.approx(first, rel=1e-6)


def test_test_and_predict_on_batch_match_evaluate_and_predict():
    model = small_model()
    assert model.test_on_batch(X[:16], Y[:16], sample_weight=W[:16]) == pytest.approx(
        model.evaluate(X[:16], Y[:16], sample_weight=W[:16], verbose=0), rel=1e-6)
    out = model.predict_on_batch(X[:5])
    assert isinstance(out, np.ndarray)
    np.testing.assert_array_equal(out, model.predict(X[:5]))


def test_train_on_batch_class_weight_errors_and_an_unbuilt_model():
    labels = (X[:16, :1] > 0).astype(np.float32)
    a, b = small_model(loss="binary_crossentropy"), small_model(loss="binary_crossentropy")
    a.fit(X[:16], labels, class_weight={0: 1.0, 1: 3.0}, batch_size=16, shuffle=False,
          verbose=0)
    b.train_on_batch(X[:16], labels, class_weight={0: 1.0, 1: 3.0})
    assert_same_weights(a, b)
    with pytest.raises(RuntimeError, match="compile"):
        small_model(compile=False).train_on_batch(X[:4], Y[:4])
    with pytest.raises(ValueError, match="x has 4 samples but y has 3"):
        a.train_on_batch(X[:4], Y[:3])
    tf.random.set_seed(3)
    lazy = tf.keras.Sequential([tf.keras.layers.Dense(2), tf.keras.layers.Dense(1)])
    lazy.compile("sgd", "mse")
    assert isinstance(lazy.train_on_batch(X[:8], Y[:8]), float)
    assert lazy.built and lazy.predict_on_batch(X[:2]).shape == (2, 1)


# --- get_layer, input_dim, summary ------------------------------------------------------------------
class TwoLayers(tf.keras.Model):
    def __init__(self):
        super().__init__(name="two")
        self.hidden = tf.keras.layers.Dense(8, activation="relu", name="hidden")
        self.flat = tf.keras.layers.Flatten()
        self.out = tf.keras.layers.Dense(3, name="out")

    def call(self, inputs):
        return self.out(self.flat(self.hidden(inputs)))


def test_get_layer_by_name_or_index_sequential_and_subclassed():
    model = small_model()
    assert model.get_layer(index=1) is model.layers[1]
    assert model.get_layer(model.layers[0].name) is model.layers[0]
    sub = TwoLayers()
    assert sub.get_layer("out") is sub.out and sub.get_layer(index=0) is sub.hidden
    with pytest.raises(ValueError, match="no layer named 'nope'.*'hidden'"):
        sub.get_layer("nope")
    with pytest.raises(ValueError, match="index 3"):
        sub.get_layer(index=3)
    with pytest.raises(ValueError, match="name= or index="):
        sub.get_layer()


def test_dense_input_dim_is_keras_2s_input_shape():
    tf.random.set_seed(0)
    a = tf.keras.Sequential([tf.keras.layers.Dense(3, input_dim=4), tf.keras.layers.Dense(1)])
    tf.random.set_seed(0)
    b = tf.keras.Sequential([tf.keras.layers.Dense(3, input_shape=(4,)), tf.keras.layers.Dense(1)])
    assert a.built and a.layers[0].kernel.shape == (4, 3)
    assert_same_weights(a, b)
    with pytest.raises(ValueError, match="input_dim=4 and input_shape=.*disagree"):
        tf.keras.layers.Dense(3, input_dim=4, input_shape=(5,))


def test_summary_of_a_subclassed_model_shows_its_layers_output_shapes():
    model = TwoLayers()
    lines = []
    model.summary(print_fn=lines.append)
    assert any("hidden (Dense)" in line and "?" in line for line in lines)  # not called yet
    model(np.ones((2, 5, 4), np.float32))
    state = random_ops.snapshot_state()
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    rows = {line.split()[0]: line for line in lines if line.split()[:1] in (["hidden"], ["out"])}
    assert "(None, 5, 8)" in rows["hidden"] and "(None, 3)" in rows["out"], text
    assert "(None, 40)" in text and "Total params: 163" in text
    assert random_ops.snapshot_state()[1] == state[1]  # the probe call drew nothing for good
