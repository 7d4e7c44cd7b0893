"""Labels Keras refuses, or weights as Keras does, instead of training on quietly wrong numbers."""
import numpy as np
import pytest

import tapeflow as tf

from .helpers import single_error


def binary_data(n=64, seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, 3)).astype(np.float32)
    return x, x[:, 0] > 0


def classifier(units=1, activation="sigmoid", loss="binary_crossentropy", seed=1, **compile_kw):
    tf.random.set_seed(seed)
    model = tf.keras.Sequential([tf.keras.Input(shape=(3,)),
                                 tf.keras.layers.Dense(units, activation=activation)])
    model.compile(tf.keras.optimizers.SGD(0.1), loss, metrics=["accuracy"], **compile_kw)
    return model


# --- string and other non-numeric labels ------------------------------------------------------
STRING_LABELS = {
    "str": lambda yes: np.where(yes, "cat", "dog"),
    "digits as str": lambda yes: np.where(yes, "1", "0"),  # trained with accuracy 0.0
    "bytes": lambda yes: np.where(yes, b"1", b"0"),
    "str objects": lambda yes: np.where(yes, "cat", "dog").astype(object),
    "list of str": lambda yes: ["cat" if v else "dog" for v in yes],
}


@pytest.mark.parametrize("method", ["fit", "evaluate"])
@pytest.mark.parametrize("kind", sorted(STRING_LABELS))
def test_string_labels_are_refused_with_the_fix(method, kind):
    x, yes = binary_data()
    model = classifier()
    before = model.get_weights()
    with pytest.raises(ValueError) as excinfo:
        getattr(model, method)(x, STRING_LABELS[kind](yes), verbose=0)
    message = single_error(excinfo)
    for words in (f"{method}:", "labels y are strings", "LabelEncoder", "integers"):
        assert words in message, message
    for w0, w1 in zip(before, model.get_weights()):
        np.testing.assert_array_equal(w0, w1)  # refused before any step


def test_object_labels_are_refused_and_told_to_convert():
    x, yes = binary_data()
    with pytest.raises(ValueError, match=r"not numbers \(dtype object\).*astype"):
        classifier().fit(x, yes.astype(int).astype(object), verbose=0)


def test_string_validation_labels_and_weights_are_refused():
    x, yes = binary_data()
    model = classifier()
    with pytest.raises(ValueError, match=r"fit\(validation_data\): the labels y are strings"):
        model.fit(x, yes, validation_data=(x, np.where(yes, "a", "b")), verbose=0)
    with pytest.raises(ValueError, match="the sample_weight values are strings"):
        model.fit(x, yes, sample_weight=np.full(len(x), "1"), verbose=0)


@pytest.mark.parametrize("loss,units,activation", [
    ("binary_crossentropy", 1, "sigmoid"),
    ("sparse_categorical_crossentropy", 2, "softmax"),
])
def test_bool_labels_train_as_their_integers(loss, units, activation):
    x, yes = binary_data()
    histories = []
    for y in (yes, yes.astype(np.int64)):
        model = classifier(units, activation, loss)
        histories.append(model.fit(x, y, epochs=3, shuffle=False, verbose=0).history)
    assert histories[0] == histories[1]
    assert histories[0]["accuracy"][-1] > 0.5
