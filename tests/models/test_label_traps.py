"""Labels Keras refuses, or weights as Keras does, instead of training on quietly wrong numbers."""
import numpy as np
import pytest

import tapeflow as tf
from assertions import assert_nested_allclose

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


# --- fit(class_weight=...) ---------------------------------------------------------------------
CLASS_WEIGHT = {0: 1.0, 1: 3.0}
LABEL_FORMS = {  # (labels from the bool classes, loss, output units, activation)
    "sparse (n,)": (lambda yes: yes.astype(np.int32), "sparse_categorical_crossentropy", 2,
                    "softmax"),
    "sparse (n, 1)": (lambda yes: yes.astype(np.int32)[:, None],
                      "sparse_categorical_crossentropy", 2, "softmax"),
    "one-hot": (lambda yes: np.eye(2, dtype=np.float32)[yes.astype(int)],
                "categorical_crossentropy", 2, "softmax"),
    "binary column, rounded": (lambda yes: np.where(yes, 0.9, 0.2).astype(np.float32)[:, None],
                               "binary_crossentropy", 1, "sigmoid"),
}


def _fit(y, loss, units, activation, run_eagerly=False, **fit_kw):
    x, _ = binary_data()
    model = classifier(units, activation, loss, run_eagerly=run_eagerly)
    history = model.fit(x, y, epochs=2, batch_size=16, shuffle=False, verbose=0, **fit_kw)
    return model.get_weights(), history.history


@pytest.mark.parametrize("run_eagerly", [False, True])
@pytest.mark.parametrize("form", sorted(LABEL_FORMS))
def test_class_weight_is_the_sample_weight_of_each_label_class(form, run_eagerly):
    make, loss, units, activation = LABEL_FORMS[form]
    _, yes = binary_data()
    y = make(yes)
    per_sample = np.where(yes, 3.0, 1.0).astype(np.float32)
    by_class = _fit(y, loss, units, activation, run_eagerly, class_weight=CLASS_WEIGHT)
    by_sample = _fit(y, loss, units, activation, run_eagerly, sample_weight=per_sample)
    plain = _fit(y, loss, units, activation, run_eagerly)
    for a, b in zip(by_class[0], by_sample[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    assert_nested_allclose(by_class[1], by_sample[1], rtol=1e-6)
    assert by_class[1]["loss"] != pytest.approx(plain[1]["loss"], rel=1e-3)


def test_class_weight_multiplies_sample_weight():
    _, yes = binary_data()
    y = yes.astype(np.int32)
    sample_weight = np.linspace(0.0, 2.0, len(y)).astype(np.float32)
    both = _fit(y, "sparse_categorical_crossentropy", 2, "softmax",
                class_weight={0: 0.5, 1: 2.0}, sample_weight=sample_weight)
    product = _fit(y, "sparse_categorical_crossentropy", 2, "softmax",
                   sample_weight=sample_weight * np.where(yes, 2.0, 0.5).astype(np.float32))
    for a, b in zip(both[0], product[0]):
        np.testing.assert_allclose(a, b, rtol=1e-6)


@pytest.mark.parametrize("validation", ["validation_data", "validation_split"])
def test_class_weight_does_not_weight_validation(validation):
    x, yes = binary_data()  # 64 samples: 48 to train on, the last 16 to validate on
    y = yes.astype(np.int32)
    model = classifier(2, "softmax", "sparse_categorical_crossentropy")
    model.compile(tf.keras.optimizers.SGD(0.0), "sparse_categorical_crossentropy")  # no steps
    if validation == "validation_data":
        args, fit_kw = (x[:48], y[:48]), {"validation_data": (x[48:], y[48:])}
    else:
        args, fit_kw = (x, y), {"validation_split": 0.25}
    history = model.fit(*args, class_weight={0: 1.0, 1: 5.0}, batch_size=64, verbose=0,
                        **fit_kw).history
    assert history["val_loss"][0] == pytest.approx(model.evaluate(x[48:], y[48:], verbose=0),
                                                   rel=1e-6)
    weighted = model.evaluate(x[:48], y[:48], verbose=0,
                              sample_weight=np.where(y[:48] == 1, 5.0, 1.0))
    assert history["loss"][0] == pytest.approx(weighted, rel=1e-6)


@pytest.mark.parametrize("class_weight,words", [
    ({0: 1.0}, ["class(es) [1]", "no weight for"]),
    ({1: 2.0}, ["class(es) [0]"]),
    ({"0": 1.0, "1": 3.0}, ["class indices (integers", "['0', '1']", "LabelEncoder"]),
    ({0.0: 1.0, 1.0: 3.0}, ["class indices (integers", "[0.0, 1.0]"]),
    ({-1: 1.0, 0: 1.0, 1: 1.0}, ["[-1]"]),
    ({True: 1.0, False: 1.0}, ["[True, False]"]),
])
def test_class_weight_errors_say_what_keras_says(class_weight, words):
    x, yes = binary_data()
    model = classifier(2, "softmax", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError) as excinfo:
        model.fit(x, yes.astype(np.int32), class_weight=class_weight, verbose=0)
    message = single_error(excinfo)
    for word in ["fit: Expected `class_weight` to be a dict with keys from 0 to one less than "
                 "the number of classes"] + words:
        assert word in message, message


def test_class_weight_that_is_not_a_dict_or_has_no_labels_is_refused():
    x, yes = binary_data()
    model = classifier(2, "softmax", "sparse_categorical_crossentropy")
    with pytest.raises(ValueError, match=r"class_weight must be a dict \{class index: weight\}"):
        model.fit(x, yes.astype(np.int32), class_weight=[1.0, 3.0], verbose=0)
    with pytest.raises(ValueError, match="values must be numbers"):
        model.fit(x, yes.astype(np.int32), class_weight={0: "a", 1: 1.0}, verbose=0)
    with pytest.raises(ValueError, match="one label per sample"):
        model.fit(x, np.zeros((len(x), 2, 2), np.float32), class_weight=CLASS_WEIGHT, verbose=0)
