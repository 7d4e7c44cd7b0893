"""The wrappers as scikit-learn uses them: clone, pickle, seeds, nested parameters, labels."""
import pickle
import pickletools
import subprocess
import sys

import numpy as np
import pytest
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, cross_val_score
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import StandardScaler

import tapeflow as tf

from .builders import regression_mlp, softmax_classifier

W = tf.keras.wrappers
FIT = {"epochs": 5, "batch_size": 16}


def _data(n=120, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, 4))
    return X, X @ np.array([1.0, -2.0, 0.5, 3.0]) + 0.1 * rng.normal(size=n)


def _labels(X, names=("cat", "dog", "eel")):
    return np.array(names)[(X[:, 0] > 0).astype(int) + (X[:, 1] > 0.5)]


def _weights(estimator):
    return [v.numpy() for v in estimator.model_.weights]


def _dense_model(outputs=1, activation=None, compiled=True):
    model = tf.keras.Sequential([tf.keras.layers.Input(shape=(4,)),
                                 tf.keras.layers.Dense(8, activation="relu"),
                                 tf.keras.layers.Dense(outputs, activation=activation)])
    if compiled:
        model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="mse")
    return model


@pytest.mark.child_process
def test_import_tapeflow_does_not_import_sklearn():
    # nor scipy: scipy.linalg alone was a third of the import's time (every CLI call pays it)
    code = "import sys, tapeflow as tf; assert 'sklearn' not in sys.modules; " \
           "assert 'scipy' not in sys.modules, 'scipy imported with tapeflow'; " \
           "tf.keras.wrappers.SKLearnRegressor; assert 'sklearn' in sys.modules"
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_tags_come_from_the_mixins_through_sklearns_current_api():
    from sklearn.base import is_classifier, is_regressor
    from sklearn.utils import get_tags
    regressor, classifier = W.SKLearnRegressor(regression_mlp), W.SKLearnClassifier(None)
    assert is_regressor(regressor) and is_classifier(classifier)
    assert get_tags(regressor).target_tags.multi_output
    assert get_tags(classifier).classifier_tags is not None
    assert get_tags(W.SKLearnTransformer(None)).transformer_tags is not None


def test_clone_of_a_fitted_estimator_is_unfitted_and_the_users_model_is_not_trained():
    model = _dense_model()
    before = [v.numpy().copy() for v in model.weights]
    X, y = _data()
    fitted = W.SKLearnRegressor(model, fit_kwargs=FIT, random_state=0).fit(X, y)
    assert all(np.array_equal(a, v.numpy()) for a, v in zip(before, model.weights))
    assert fitted.model_ is not model
    twin = clone(fitted)
    assert not hasattr(twin, "model_") and not hasattr(twin, "history_")
    assert twin.get_params(deep=False).keys() == fitted.get_params(deep=False).keys()
    with pytest.raises(Exception, match="not fitted"):
        twin.predict(X)
    assert np.array_equal(twin.fit(X, y).predict(X), fitted.predict(X))


def test_same_random_state_same_weights_bitwise_whatever_the_callers_seed():
    X, y = _data()
    tf.random.set_seed(1)
    a = W.SKLearnRegressor(regression_mlp, fit_kwargs=FIT, random_state=7).fit(X, y)
    tf.random.set_seed(2)
    b = W.SKLearnRegressor(regression_mlp, fit_kwargs=FIT, random_state=7).fit(X, y)
    c = W.SKLearnRegressor(regression_mlp, fit_kwargs=FIT, random_state=8).fit(X, y)
    assert all(np.array_equal(p, q) for p, q in zip(_weights(a), _weights(b)))
    assert not np.array_equal(_weights(a)[0], _weights(c)[0])


def test_a_seeded_fit_leaves_the_callers_random_state_as_it_was():
    X, y = _data()
    tf.random.set_seed(3)
    expected = tf.random.normal([4]).numpy()
    tf.random.set_seed(3)
    W.SKLearnRegressor(regression_mlp, fit_kwargs=FIT, random_state=0).fit(X, y)
    assert np.array_equal(tf.random.normal([4]).numpy(), expected)


def _pickled_globals(data):
    return {arg for op, arg, _ in pickletools.genops(data)
            if op.name in ("GLOBAL", "STACK_GLOBAL", "SHORT_BINUNICODE", "BINUNICODE")
            and isinstance(arg, str) and arg.startswith("tapeflow.")}


@pytest.mark.parametrize("model", ["instance", "function"])
def test_pickle_round_trip_predicts_bitwise_and_holds_no_tapeflow_objects(model):
    X, y = _data()
    estimator = W.SKLearnRegressor(_dense_model() if model == "instance" else regression_mlp,
                                   fit_kwargs=FIT, random_state=0).fit(X, y)
    data = pickle.dumps(estimator)
    # only the wrapper's own class is named: the models travel as a Keras save's bytes
    assert _pickled_globals(data) <= {"tapeflow.wrappers.regressor"}
    loaded = pickle.loads(data)
    assert np.array_equal(loaded.predict(X), estimator.predict(X))
    assert loaded.n_features_in_ == 4 and loaded.history_ == estimator.history_
    # the unpickled estimator fits again as the original would
    assert np.array_equal(clone(loaded).fit(X, y).predict(X), estimator.predict(X))


def test_nested_parameters_set_and_grid_searched():
    X, y = _data()
    estimator = W.SKLearnRegressor(regression_mlp, model_kwargs={"units": 4}, fit_kwargs=FIT,
                                   random_state=0)
    params = estimator.get_params()
    assert params["model_kwargs__units"] == 4 and params["fit_kwargs__epochs"] == 5
    shared = estimator.fit_kwargs
    estimator.set_params(model_kwargs__units=6, fit_kwargs__epochs=2)
    assert estimator.model_kwargs == {"units": 6} and estimator.fit_kwargs["epochs"] == 2
    assert shared == FIT  # the dict given is not changed in place
    estimator.fit(X, y)
    assert estimator.model_.layers[0].units == 6 and len(estimator.history_["loss"]) == 2
    search = GridSearchCV(estimator, {"model_kwargs__units": [2, 8],
                                      "fit_kwargs__epochs": [1, 3]}, cv=2).fit(X, y)
    assert set(search.best_params_) == {"model_kwargs__units", "fit_kwargs__epochs"}
    with pytest.raises(ValueError, match="not a dict"):
        W.SKLearnRegressor(regression_mlp, fit_kwargs=3).set_params(fit_kwargs__epochs=2)


@pytest.mark.child_process
def test_grid_search_over_learning_rates_on_housing_in_two_processes():
    from sklearn.datasets import fetch_california_housing
    housing = fetch_california_housing()
    rows = np.random.default_rng(0).choice(len(housing.target), 600, replace=False)
    X, y = housing.data[rows], housing.target[rows]
    pipeline = make_pipeline(StandardScaler(), W.SKLearnRegressor(
        regression_mlp, model_kwargs={"units": 16}, fit_kwargs={"epochs": 5, "batch_size": 32},
        random_state=0))
    grid = {"sklearnregressor__model_kwargs__learning_rate": [1e-3, 3e-2]}
    search = GridSearchCV(pipeline, grid, cv=2, n_jobs=2, scoring="neg_mean_squared_error")
    search.fit(X, y)
    scores = search.cv_results_["mean_test_score"]
    assert np.all(np.isfinite(scores)) and scores[1] > scores[0]  # 1e-3 has barely moved
    serial = GridSearchCV(pipeline, grid, cv=2, scoring="neg_mean_squared_error").fit(X, y)
    assert np.array_equal(serial.cv_results_["mean_test_score"], scores)  # seeded, so same


def test_string_labels_round_trip_through_fit_predict_and_pickle():
    X, _ = _data(200)
    labels = _labels(X)
    clf = W.SKLearnClassifier(softmax_classifier, fit_kwargs={"epochs": 30, "batch_size": 16},
                              random_state=0).fit(X, labels)
    assert list(clf.classes_) == ["cat", "dog", "eel"]
    predicted = clf.predict(X)
    assert predicted.dtype.kind == "U" and set(predicted) <= set(labels)
    assert clf.score(X, labels) > 0.8
    proba = clf.predict_proba(X)
    assert proba.shape == (200, 3) and np.allclose(proba.sum(axis=1), 1, atol=1e-6)
    loaded = pickle.loads(pickle.dumps(clf))
    assert np.array_equal(loaded.predict_proba(X), proba)
    assert np.array_equal(loaded.predict(X), predicted)


@pytest.mark.parametrize("loss, units, activation", [
    ("binary_crossentropy", 1, "sigmoid"),
    ("sparse_categorical_crossentropy", 2, "softmax"),
    ("categorical_crossentropy", 2, "softmax"),
])
def test_binary_labels_with_each_output_and_loss(loss, units, activation):
    X, _ = _data(200)
    y = np.where(X[:, 0] + X[:, 1] > 0, 2.0, -1.0)  # float labels (integral: 2.5 would be a regression target)
    model = _dense_model(units, activation, compiled=False)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.05), loss=loss)
    clf = W.SKLearnClassifier(model, fit_kwargs={"epochs": 20, "batch_size": 16},
                              random_state=0).fit(X, y)
    assert list(clf.classes_) == [-1.0, 2.0]
    assert clf.predict_proba(X).shape == (200, 2) and clf.score(X, y) > 0.9


def test_an_uncompiled_model_is_compiled_with_adam_and_a_fitting_loss():
    X, y = _data()
    clf = W.SKLearnClassifier(_dense_model(3, "softmax", compiled=False), fit_kwargs=FIT,
                              random_state=0).fit(X, _labels(X))
    assert type(clf.model_.optimizer).__name__ == "Adam"
    reg = W.SKLearnRegressor(_dense_model(compiled=False), fit_kwargs=FIT).fit(X, y)
    assert reg.predict(X).shape == (120,)


def test_cross_val_score_in_a_pipeline_with_a_scaler():
    X, y = _data(150)
    pipeline = make_pipeline(StandardScaler(), W.SKLearnRegressor(
        regression_mlp, fit_kwargs={"epochs": 20, "batch_size": 16}, random_state=0))
    scores = cross_val_score(pipeline, X * 100 + 5, y, cv=3)
    assert scores.shape == (3,) and np.all(scores > 0.5)


def test_transformer_gives_the_models_output_as_features():
    X, _ = _data()
    encoder = tf.keras.Sequential([tf.keras.layers.Input(shape=(4,)),
                                   tf.keras.layers.Dense(4)])
    features = W.SKLearnTransformer(encoder, fit_kwargs=FIT, random_state=0).fit_transform(X)
    assert features.shape == (120, 4)


def test_bad_models_and_labels_get_one_clear_error():
    X, y = _data()
    with pytest.raises(TypeError, match="model must be a tapeflow model"):
        W.SKLearnRegressor("dense").fit(X, y)
    with pytest.raises(TypeError, match="returned dict"):
        W.SKLearnRegressor(lambda X, y: {}).fit(X, y)
    with pytest.raises(ValueError, match="model_kwargs"):
        W.SKLearnRegressor(_dense_model(), model_kwargs={"units": 3}).fit(X, y)
    with pytest.raises(ValueError, match="1 class"):
        W.SKLearnClassifier(softmax_classifier).fit(X, np.zeros(len(X)))
    with pytest.raises(ValueError, match="has 2 output units but y has 3 classes"):
        W.SKLearnClassifier(_dense_model(2, "softmax")).fit(X, _labels(X))
