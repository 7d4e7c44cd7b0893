"""Training functional models: list and dict inputs, a loss (and metrics) per output with
loss_weights, traced fit = eager fit, masks through the graph, and summary()'s connections."""
import numpy as np
import pytest

import tapeflow as tf
from tapeflow.layers.merging import Concatenate
from tapeflow.models import batching as data_module

L = tf.keras.layers


def _data(n=24, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.standard_normal((n, 4)).astype(np.float32)
    b = rng.standard_normal((n, 3)).astype(np.float32)
    reg = (a[:, :1] - b[:, :1]).astype(np.float32)
    cls = (a[:, 0] > 0).astype(np.int32) + (b[:, 0] > 0).astype(np.int32)
    return a, b, reg, cls


def two_heads(seed=0):
    """Inputs a, b -> Concatenate -> Dense(8) -> a regression head and a 3-class head."""
    tf.keras.utils.set_random_seed(seed)
    a, b = tf.keras.Input((4,), name="a"), tf.keras.Input((3,), name="b")
    h = L.Dense(8, activation="tanh", name="hidden")(Concatenate(name="joined")([a, b]))
    return tf.keras.Model({"a": a, "b": b}, [L.Dense(1, name="reg")(h),
                                              L.Dense(3, activation="softmax", name="cls")(h)])


def test_a_loss_per_output_is_the_weighted_sum_and_each_is_logged():
    model = two_heads()
    a, b, reg, cls = _data()
    model.compile("sgd", loss={"reg": "mse", "cls": "sparse_categorical_crossentropy"},
                  loss_weights={"reg": 2.0, "cls": 0.5},
                  metrics={"cls": "accuracy", "reg": ["mae"]})
    logs = model.evaluate({"a": a, "b": b}, [reg, cls], batch_size=24, verbose=0,
                          return_dict=True)
    assert list(logs) == ["loss", "reg_loss", "cls_loss", "reg_mae", "cls_accuracy"]
    p_reg, p_cls = model.predict({"a": a, "b": b}, verbose=0)
    mse = np.mean((p_reg - reg) ** 2)
    xent = -np.mean(np.log(p_cls[np.arange(len(cls)), cls]))
    np.testing.assert_allclose(logs["reg_loss"], mse, rtol=1e-5)
    np.testing.assert_allclose(logs["cls_loss"], xent, rtol=1e-5)
    np.testing.assert_allclose(logs["loss"], 2.0 * mse + 0.5 * xent, rtol=1e-5)
    np.testing.assert_allclose(logs["reg_mae"], np.mean(np.abs(p_reg - reg)), rtol=1e-5)
    np.testing.assert_allclose(logs["cls_accuracy"], np.mean(p_cls.argmax(1) == cls))
    assert model.metrics_names == list(logs)


def test_one_loss_for_every_output_and_an_output_without_a_loss():
    model = two_heads()
    a, b, reg, cls = _data()
    model.compile("sgd", loss="mse")
    history = model.fit([a, b], [reg, tf.keras.utils.to_categorical(cls, 3)], epochs=1,
                        verbose=0)
    assert set(history.history) == {"loss", "reg_loss", "cls_loss"}
    model.compile("sgd", loss=["mse", None])
    logs = model.evaluate([a, b], [reg, cls], verbose=0, return_dict=True)
    assert set(logs) == {"loss", "reg_loss"}
    np.testing.assert_allclose(logs["loss"], logs["reg_loss"], rtol=1e-6)


@pytest.mark.parametrize("loss, words", [
    (["mse"], "1 entries for the model's 2 outputs"),
    ({"regression": "mse"}, "['regression'] are not outputs"),
])
def test_losses_that_do_not_fit_the_outputs_are_refused(loss, words):
    with pytest.raises(ValueError, match=words.replace("[", r"\[").replace("]", r"\]")):
        two_heads().compile("sgd", loss=loss)


def test_targets_that_do_not_fit_the_outputs_are_refused():
    model = two_heads()
    model.compile("sgd", loss="mse")
    a, b, reg, _ = _data()
    with pytest.raises(ValueError, match="outputs"):
        model.fit([a, b], reg, verbose=0)
    with pytest.raises(ValueError, match=r"x\[1\] has 5"):
        model.fit([a, b[:5]], [reg, reg], verbose=0)


def test_traced_fit_equals_eager_fit():
    a, b, reg, cls = _data(30)
    weights = []
    for run_eagerly in (False, True):
        model = two_heads(seed=3)
        model.compile(tf.keras.optimizers.Adam(0.01),
                      loss=["mse", "sparse_categorical_crossentropy"], run_eagerly=run_eagerly)
        tf.keras.utils.set_random_seed(5)
        history = model.fit({"a": a, "b": b}, (reg, cls), batch_size=8, epochs=2, verbose=0,
                            validation_split=0.2)
        weights.append((model.get_weights(), history.history))
    for traced, eager in zip(weights[0][0], weights[1][0]):
        np.testing.assert_allclose(traced, eager, rtol=1e-5, atol=1e-6)
    for key, values in weights[0][1].items():
        np.testing.assert_allclose(values, weights[1][1][key], rtol=1e-5)


def test_masks_ride_through_the_graph_as_through_a_sequential():
    tf.keras.utils.set_random_seed(1)
    ids = tf.keras.Input((5,), dtype="int32")
    embed, lstm = L.Embedding(6, 3, mask_zero=True), L.LSTM(2)
    model = tf.keras.Model(ids, lstm(embed(ids)))
    x = np.array([[1, 2, 3, 0, 0], [4, 5, 0, 0, 0]], np.int32)
    np.testing.assert_allclose(model(x).numpy(), lstm(embed(x)).numpy(), rtol=1e-6)
    np.testing.assert_allclose(model(x).numpy(), lstm(embed(x[:, :3])).numpy(), rtol=1e-5)


def test_summary_shows_shapes_params_and_connections():
    a, b = tf.keras.Input((4,), name="a"), tf.keras.Input((3,), name="b")
    shared = L.Dense(5, name="shared")
    ha, hb = shared(L.Dense(5, name="pa")(a)), shared(L.Dense(5, name="pb")(b))
    model = tf.keras.Model([a, b], Concatenate(name="cat")([ha, hb]), name="net")
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert lines[0] == 'Model: "net"' and "Connected to" in lines[2]
    row = {line.split()[0]: line for line in lines[4:11]}
    assert row["a"].split()[1:] == ["(InputLayer)", "(None,", "4)", "0", "-"]
    assert row["shared"].split()[-2:] == ["pa[0][0],", "pb[0][0]"]
    assert row["shared"].split()[1:5] == ["(Dense)", "(None,", "5)", "30"]
    assert row["cat"].split()[-2:] == ["shared[0][0],", "shared[1][0]"]
    assert "(None, 10)" in row["cat"]
    assert "Total params: 75" in text


def test_lists_of_numbers_stay_one_array_and_lists_of_arrays_are_one_per_input():
    model = tf.keras.Sequential([tf.keras.Input((1,)), L.Dense(1)])
    model.compile("sgd", "mse")
    model.fit([[1.0], [2.0], [3.0]], [np.float32(1), np.float32(2), np.float32(3)], verbose=0)
    x, y, _ = data_module.as_arrays([np.ones((3, 2)), np.ones((3, 4))],
                                  [np.zeros(3), np.zeros(3)])
    assert [a.shape for a in x] == [(3, 2), (3, 4)] and [a.shape for a in y] == [(3,), (3,)]
