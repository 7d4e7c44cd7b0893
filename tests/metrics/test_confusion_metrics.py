"""Precision, Recall and AUC against sklearn and against numpy references of Keras 3's
formulas (brute-force threshold comparisons, the trapezoid / Riemann sums, Davis-Goadrich
interpolation for PR), over several batches with weights; traced updates equal eager ones."""
import json

import numpy as np
import pytest
from sklearn import metrics as skm

import tapeflow as tf
from tapeflow import metrics

EPS = 1e-7


def _binary_data(rng, n=400):
    y = rng.integers(0, 2, n)
    p = np.clip(rng.random(n) * 0.7 + 0.3 * y, 0, 1)  # informative, not separable
    return y, p


def _batches(metric, *arrays, sizes=(150, 50, 200)):
    start = 0
    for size in sizes:
        metric.update_state(*(a[start:start + size] if a is not None else None for a in arrays))
        start += size
    return metric.result().numpy()


# --- numpy references of Keras's formulas ---------------------------------------------------------
def _thresholds(num_thresholds=200):
    inner = [(i + 1) / (num_thresholds - 1) for i in range(num_thresholds - 2)]
    return np.array([-EPS] + inner + [1 + EPS])


def _counts(y, p, w, thresholds):
    y, p, w = (np.asarray(a, float).reshape(-1) for a in (y, p, np.broadcast_to(w, np.shape(p))))
    pos = p[None, :] > thresholds[:, None]
    true = (y != 0)[None, :]
    return [np.sum(w * (a & b), axis=1) for a, b in
            ((true, pos), (~true, pos), (~true, ~pos), (true, ~pos))]  # tp, fp, tn, fn


def _div(x, y):
    return np.where(y == 0, 0.0, x / np.where(y == 0, 1, y))


def _auc_reference(tp, fp, tn, fn, curve="ROC", summation="interpolation"):
    if curve == "PR" and summation == "interpolation":
        dtp = tp[:-1] - tp[1:]
        p = tp + fp
        dp = p[:-1] - p[1:]
        slope = _div(dtp, np.maximum(dp, 0))
        intercept = tp[1:] - slope * p[1:]
        ratio = np.where((p[:-1] > 0) & (p[1:] > 0), _div(p[:-1], np.maximum(p[1:], 0)), 1.0)
        return np.sum(_div(slope * (dtp + intercept * np.log(ratio)), tp[1:] + fn[1:]))
    recall = _div(tp, tp + fn)
    x, y = (_div(fp, fp + tn), recall) if curve == "ROC" else (recall, _div(tp, tp + fp))
    heights = {"interpolation": (y[:-1] + y[1:]) / 2, "minoring": np.minimum(y[:-1], y[1:]),
               "majoring": np.maximum(y[:-1], y[1:])}[summation]
    return np.sum((x[:-1] - x[1:]) * heights)


# --- AUC ------------------------------------------------------------------------------------------
def test_roc_auc_is_sklearns_within_the_200_threshold_approximation():
    rng = np.random.default_rng(0)
    y, p = _binary_data(rng)
    w = rng.uniform(0.2, 2.0, len(y))
    got = _batches(metrics.AUC(), y, p, None)
    assert got.dtype == np.float32
    assert abs(got - skm.roc_auc_score(y, p)) < 2e-3
    got = _batches(metrics.AUC(), y, p, w)
    assert abs(got - skm.roc_auc_score(y, p, sample_weight=w)) < 2e-3


@pytest.mark.parametrize("curve", ["ROC", "PR"])
@pytest.mark.parametrize("summation", ["interpolation", "minoring", "majoring"])
def test_auc_is_keras_formula_over_the_counts(curve, summation):
    rng = np.random.default_rng(1)
    y, p = _binary_data(rng)
    w = rng.uniform(0.2, 2.0, len(y))
    metric = metrics.AUC(num_thresholds=37, curve=curve, summation_method=summation)
    got = _batches(metric, y, p, w)
    counts = _counts(y, p, w, _thresholds(37))
    np.testing.assert_allclose(metric.true_positives.numpy(), counts[0], rtol=1e-5)
    np.testing.assert_allclose(metric.true_negatives.numpy(), counts[2], rtol=1e-5)
    np.testing.assert_allclose(got, _auc_reference(*counts, curve, summation), rtol=1e-5)


def test_pr_auc_is_close_to_sklearns_average_precision():
    rng = np.random.default_rng(2)
    y, p = _binary_data(rng, 2000)
    assert abs(_batches(metrics.AUC(curve="PR"), y, p, None, sizes=(2000,))
               - skm.average_precision_score(y, p)) < 0.01


def test_given_thresholds_and_logits():
    rng = np.random.default_rng(3)
    y, p = _binary_data(rng)
    thresholds = [0.1, 0.35, 0.5, 0.8]
    metric = metrics.AUC(thresholds=thresholds)
    counts = _counts(y, p, 1.0, np.array([-EPS] + thresholds + [1 + EPS]))
    np.testing.assert_allclose(_batches(metric, y, p, None), _auc_reference(*counts), rtol=1e-5)
    assert metric.num_thresholds == 6
    logits = np.log(p + 1e-3) - np.log(1 - p + 1e-3)
    a = _batches(metrics.AUC(from_logits=True), y, logits, None)
    b = _batches(metrics.AUC(), y, 1 / (1 + np.exp(-logits)), None)
    np.testing.assert_allclose(a, b, rtol=1e-6)


def test_multi_label_auc_averages_each_labels_auc():
    rng = np.random.default_rng(4)
    y = rng.integers(0, 2, (300, 3))
    p = np.clip(rng.random((300, 3)) * 0.8 + 0.2 * y * np.array([0.5, 1.0, 0.0]), 0, 1)
    per_label = [skm.roc_auc_score(y[:, j], p[:, j]) for j in range(3)]
    metric = metrics.AUC(multi_label=True)
    assert abs(_batches(metric, y, p, None, sizes=(100, 200)) - np.mean(per_label)) < 3e-3
    assert metric.true_positives.shape == (200, 3)
    weighted = metrics.AUC(multi_label=True, num_labels=3, label_weights=[1.0, 0.0, 3.0])
    want = (per_label[0] + 3 * per_label[2]) / 4
    assert abs(_batches(weighted, y, p, None, sizes=(300,)) - want) < 3e-3
    flat = metrics.AUC()  # not multi-label: every entry one point of one curve
    assert abs(_batches(flat, y, p, None, sizes=(300,)) - skm.roc_auc_score(y.ravel(), p.ravel())) \
        < 3e-3


def test_auc_errors():
    with pytest.raises(ValueError, match="num_thresholds"):
        metrics.AUC(num_thresholds=1)
    with pytest.raises(ValueError, match="curve"):
        metrics.AUC(curve="DET")
    with pytest.raises(ValueError, match="summation_method"):
        metrics.AUC(summation_method="simpson")
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        metrics.AUC(thresholds=[0.5, 1.5])
    with pytest.raises(ValueError, match="same shape"):
        metrics.AUC().update_state(np.zeros((4, 2)), np.zeros((4, 3)))


# --- Precision and Recall -------------------------------------------------------------------------
@pytest.mark.parametrize("cls, score", [(metrics.Precision, skm.precision_score),
                                        (metrics.Recall, skm.recall_score)])
def test_precision_and_recall_are_sklearns(cls, score):
    rng = np.random.default_rng(5)
    y, p = _binary_data(rng)
    w = rng.uniform(0.2, 2.0, len(y))
    got = _batches(cls(), y, p[:, None], w)  # (batch,) labels with (batch, 1) predictions
    assert got.shape == ()
    np.testing.assert_allclose(got, score(y, p > 0.5, sample_weight=w), rtol=1e-5)
    got = _batches(cls(thresholds=[0.3, 0.5, 0.7]), y, p, None)
    want = [score(y, p > t) for t in (0.3, 0.5, 0.7)]
    np.testing.assert_allclose(got, want, rtol=1e-6)


def _top_k_mask(p, k):
    order = np.argsort(-p, axis=-1, kind="stable")[:, :k]
    mask = np.zeros(p.shape, bool)
    np.put_along_axis(mask, order, True, axis=-1)
    return mask


def test_top_k_and_class_id():
    rng = np.random.default_rng(6)
    y = rng.integers(0, 2, (80, 5))
    p = rng.random((80, 5))
    predicted = _top_k_mask(p, 2)
    tp = np.sum(predicted & (y == 1))
    np.testing.assert_allclose(_batches(metrics.Precision(top_k=2), y, p, None, sizes=(30, 50)),
                               tp / predicted.sum(), rtol=1e-6)
    np.testing.assert_allclose(_batches(metrics.Recall(top_k=2), y, p, None, sizes=(30, 50)),
                               tp / np.sum(y == 1), rtol=1e-6)
    np.testing.assert_allclose(_batches(metrics.Precision(class_id=3), y, p, None, sizes=(80,)),
                               skm.precision_score(y[:, 3], p[:, 3] > 0.5), rtol=1e-6)
    both = predicted[:, 1] & (p[:, 1] > 0.4)
    np.testing.assert_allclose(
        _batches(metrics.Recall(top_k=2, class_id=1, thresholds=0.4), y, p, None, sizes=(80,)),
        np.sum(both & (y[:, 1] == 1)) / np.sum(y[:, 1] == 1), rtol=1e-6)


def test_no_positives_gives_zero_not_nan():
    metric = metrics.Precision()
    metric.update_state([0, 1], [0.1, 0.2])
    assert metric.result().numpy() == 0.0


def test_precision_recall_errors():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        metrics.Precision(thresholds=-0.1)
    with pytest.raises(ValueError, match="top_k"):
        metrics.Recall(top_k=0)
    with pytest.raises(ValueError, match="class_id"):
        metrics.Recall(class_id=-1)


# --- state, traced updates, names -----------------------------------------------------------------
@pytest.mark.parametrize("make", [lambda: metrics.AUC(num_thresholds=20),
                                  lambda: metrics.AUC(curve="PR", multi_label=True),
                                  lambda: metrics.Precision(thresholds=[0.2, 0.6]),
                                  lambda: metrics.Recall(top_k=1)], ids=["auc", "pr_multi",
                                                                          "precision", "recall"])
def test_traced_update_and_result_equal_eager_ones(make):
    rng = np.random.default_rng(7)
    batches = [(rng.integers(0, 2, (n, 3)).astype(np.float32), rng.random((n, 3)).astype(np.float32),
                rng.random(n).astype(np.float32)) for n in (6, 9)]
    eager, traced = make(), make()

    @tf.function
    def step(y, p, w):
        traced.update_state(y, p, sample_weight=w)
        return traced.result()
    for y, p, w in batches:
        eager.update_state(y, p, sample_weight=w)
        np.testing.assert_allclose(step(tf.constant(y), tf.constant(p), tf.constant(w)).numpy(),
                                   eager.result().numpy(), rtol=1e-6)
    for a, b in zip(eager.variables, traced.variables):
        np.testing.assert_array_equal(a.numpy(), b.numpy())


def test_reset_state_and_config_round_trip():
    rng = np.random.default_rng(8)
    y, p = _binary_data(rng)
    for metric in (metrics.AUC(num_thresholds=30, curve="PR", summation_method="majoring",
                               name="pr"),
                   metrics.AUC(thresholds=[0.2, 0.4], multi_label=True, num_labels=1,
                               label_weights=[2.0]),
                   metrics.Precision(thresholds=np.array([0.3, 0.6]), name="p"),
                   metrics.Recall(top_k=1, class_id=0)):
        again = metrics.deserialize(json.loads(json.dumps(metrics.serialize(metric))))
        assert type(again) is type(metric) and again.get_config() == metric.get_config()
        first = _batches(metric, y[:, None], p[:, None], None)
        metric.reset_state()
        assert all(not np.any(v.numpy()) for v in metric.variables)
        np.testing.assert_array_equal(_batches(metric, y[:, None], p[:, None], None), first)
        np.testing.assert_array_equal(_batches(again, y[:, None], p[:, None], None), first)


@pytest.mark.parametrize("name, cls", [("auc", metrics.AUC), ("AUC", metrics.AUC),
                                       ("precision", metrics.Precision),
                                       ("Recall", metrics.Recall)])
def test_names(name, cls):
    assert type(metrics.get(name)) is cls
    assert getattr(tf.keras.metrics, cls.__name__) is cls


def test_compiled_in_a_traced_fit_as_eagerly():
    rng = np.random.default_rng(9)
    x = rng.standard_normal((48, 4)).astype(np.float32)
    y = (x[:, :1] + 0.5 * rng.standard_normal((48, 1)) > 0).astype(np.float32)
    logs = []
    for run_eagerly in (False, True):
        tf.random.set_seed(0)
        model = tf.keras.Sequential([tf.keras.Input(shape=(4,)),
                                     tf.keras.layers.Dense(1, activation="sigmoid")])
        model.compile("adam", "binary_crossentropy", run_eagerly=run_eagerly,
                      metrics=["auc", metrics.AUC(curve="PR", name="pr_auc"), "precision",
                               metrics.Recall(thresholds=0.3)])
        history = model.fit(x, y, epochs=2, batch_size=16, verbose=0).history
        logs.append((history, model.evaluate(x, y, verbose=0, return_dict=True)))
    assert set(logs[0][1]) == {"loss", "auc", "pr_auc", "precision", "recall"}
    for key, values in logs[0][0].items():
        np.testing.assert_allclose(values, logs[1][0][key], rtol=1e-6, err_msg=key)
    for key, value in logs[0][1].items():
        np.testing.assert_allclose(value, logs[1][1][key], rtol=1e-6, err_msg=key)
