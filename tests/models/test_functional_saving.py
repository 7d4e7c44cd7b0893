"""A functional model's config (Keras's layout), ``model.save`` / ``load_model`` in .keras and .h5,
and the trainer's checkpoint writer: the same predictions after the round trip; nothing in a
config is ever imported or run."""
import json

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.models.functional import Functional
from tapeflow.saving import format as fmt
from tapeflow.training.checkpoint import read_checkpoint, restore_model, write_checkpoint
from tapeflow.training.run_config import RunConfig

L = tf.keras.layers


def _data(*shapes, seed=0):
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(s).astype(np.float32) for s in shapes]


def graph_model():
    """Two inputs, a shared layer, a nested model, a Monte-Carlo-free Dropout, two outputs."""
    a, b = tf.keras.Input((4,), name="a"), tf.keras.Input((3,), name="b")
    shared = L.Dense(5, activation="tanh", name="shared")
    ha, hb = shared(L.Dense(5, name="proj_a")(a)), shared(L.Dense(5, name="proj_b")(b))
    inner_in = tf.keras.Input((5,))
    inner = tf.keras.Model(inner_in, L.Dense(2)(L.Dropout(0.3)(inner_in)), name="inner")
    out1 = inner(L.Average()([ha, hb]))
    out2 = L.Dense(1, name="out2")(L.Concatenate()([ha, hb, inner(hb)]))
    return tf.keras.Model([a, b], [out1, out2], name="graph")


def _same(got, want):
    for g, w in zip(got if isinstance(got, (list, tuple)) else [got],
                    want if isinstance(want, (list, tuple)) else [want]):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))


def test_config_has_keras_layout_and_rebuilds_the_same_function():
    model = graph_model()
    config = json.loads(json.dumps(model.get_config()))
    assert config["input_layers"] == [["a", 0, 0], ["b", 0, 0]]
    assert [e["name"] for e in config["layers"]][:2] == ["a", "b"]
    shared = next(e for e in config["layers"] if e["name"] == "shared")
    assert len(shared["inbound_nodes"]) == 2
    history = shared["inbound_nodes"][1]["args"][0]["config"]["keras_history"]
    assert history == ["proj_b", 0, 0]
    inner = next(e for e in config["layers"] if e["name"] == "inner")
    assert inner["class_name"] == "Functional" and len(inner["inbound_nodes"]) == 2
    clone = tf.keras.Model.from_config(config)
    assert isinstance(clone, Functional)
    assert [l.name for l in clone.layers] == [l.name for l in model.layers]
    clone.set_weights(model.get_weights())
    x = _data((6, 4), (6, 3))
    _same([t.numpy() for t in clone(x)], [t.numpy() for t in model(x)])
    assert json.loads(json.dumps(clone.get_config())) == config


@pytest.mark.parametrize("suffix", [".keras", ".h5"])
def test_save_and_load_model_predict_the_same(tmp_path, suffix):
    model = graph_model()
    model.compile("adam", ["mse", "mse"])
    x = _data((6, 4), (6, 3))
    y = _data((6, 2), (6, 1), seed=1)
    model.fit(x, y, epochs=1, batch_size=3, verbose=0)
    path = str(tmp_path / f"m{suffix}")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    assert isinstance(loaded, Functional)
    _same(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    # compiled again with its optimizer state: training goes on as it would have
    for m in (model, loaded):  # the same Dropout draws for both
        tf.keras.utils.set_random_seed(7)
        m.fit(x, y, epochs=1, batch_size=6, shuffle=False, verbose=0)
    _same(loaded.get_weights(), model.get_weights())


def test_dict_model_round_trips_with_its_structure(tmp_path):
    a, b = tf.keras.Input((2,), name="p"), tf.keras.Input((2,), name="q")
    h = L.Dense(3, name="h")(L.Multiply()([a, b]))
    model = tf.keras.Model({"p": a, "q": b}, {"score": L.Dense(1, name="s")(h), "hidden": h})
    path = str(tmp_path / "d.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    x = dict(zip(["p", "q"], _data((3, 2), (3, 2))))
    got, want = loaded.predict(x, verbose=0), model.predict(x, verbose=0)
    assert set(got) == {"score", "hidden"}
    _same([got["score"], got["hidden"]], [want["score"], want["hidden"]])


def test_int_inputs_keep_their_dtype_in_the_saved_graph(tmp_path):
    ids = tf.keras.Input((3,), dtype="int32", name="ids")
    scale = tf.keras.Input((1,), name="scale")
    out = L.Multiply()([L.Dense(2)(L.Flatten()(L.Embedding(8, 2)(ids))), scale])
    model = tf.keras.Model([ids, scale], out)
    path = str(tmp_path / "i.h5")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    x = [np.array([[1, 2, 3], [4, 5, 6]], np.int32), np.array([[2.0], [0.5]], np.float32)]
    _same(loaded.predict(x, verbose=0), model.predict(x, verbose=0))


def test_a_config_naming_code_is_refused_never_imported():
    model = graph_model()
    config = json.loads(json.dumps(model.get_config()))
    config["layers"][2]["class_name"] = "os.system"
    with pytest.raises(ValueError, match="os.system"):
        tf.keras.Model.from_config(config)
    config = json.loads(json.dumps(model.get_config()))
    config["layers"][3]["inbound_nodes"][0]["args"][0]["config"]["keras_history"] = ["nope", 0, 0]
    with pytest.raises(ValueError, match="'nope'"):
        tf.keras.Model.from_config(config)


def test_the_trainers_checkpoint_writer_takes_a_functional_model(tmp_path):
    model = graph_model()
    model.compile("adam", "mse")
    x = _data((4, 4), (4, 3))
    model.fit(x, _data((4, 2), (4, 1), seed=2), epochs=1, verbose=0)
    path = str(tmp_path / "epoch-0001.h5")
    # a checkpoint's training state holds a valid run config (checked when it is read)
    config = RunConfig.model_validate({"data": {"source": "california_housing"},
                                       "model": {"layers": [{"Dense": {"units": 1}}]}})
    training = {"epoch": 1, "finished": False, "stopped": False, "history": {},
                "config": config.resolved(), "data_fingerprint": "x", "callbacks": {}}
    write_checkpoint(path, model, training)
    ckpt = read_checkpoint(path)
    assert ckpt.epoch == 1
    twin = tf.keras.Model.from_config(model.get_config())
    twin.compile("adam", "mse")
    twin.optimizer.build(twin.trainable_variables)
    restore_model(twin, ckpt)
    _same(twin.predict(x, verbose=0), model.predict(x, verbose=0))
    document, arrays = fmt.read(path)
    arrays.close()
    assert document["model_config"]["class_name"] == "Functional"


def test_a_layer_shared_with_another_model_numbers_only_this_models_calls(tmp_path):
    encoder = L.Dense(3, name="encoder")
    encoder(tf.keras.Input((2,)))  # a call outside the model: not in its config
    x = tf.keras.Input((2,), name="x")
    model = tf.keras.Model(x, L.Dense(1, name="head")(encoder(x)))
    config = model.get_config()
    (node,) = next(e for e in config["layers"] if e["name"] == "encoder")["inbound_nodes"]
    assert node["args"][0]["config"]["keras_history"] == ["x", 0, 0]
    head = next(e for e in config["layers"] if e["name"] == "head")["inbound_nodes"][0]
    assert head["args"][0]["config"]["keras_history"] == ["encoder", 0, 0]
    path = str(tmp_path / "shared.keras")
    model.save(path)
    (d,) = _data((3, 2))
    _same(tf.keras.models.load_model(path).predict(d, verbose=0), model.predict(d, verbose=0))


def test_a_layer_called_with_several_tensor_arguments_round_trips(tmp_path):
    x = tf.keras.Input((4, 6), name="sequence")
    context = tf.keras.Input((3, 6), name="context")
    attended = L.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")(x, context)
    model = tf.keras.Model([x, context], L.Dense(1)(attended))
    assert model.output_shape == (None, 4, 1)
    path = str(tmp_path / "mha.h5")
    model.save(path)
    data = _data((2, 4, 6), (2, 3, 6))
    _same(tf.keras.models.load_model(path).predict(data, verbose=0),
          model.predict(data, verbose=0))


def test_without_its_code_a_saved_functional_model_still_predicts_from_its_graph(tmp_path):
    class Twice(L.Layer):  # not registered: load_model cannot rebuild it from the config
        def call(self, x):
            return x * 2.0
    a, b = tf.keras.Input((3,), name="a"), tf.keras.Input((2,), name="b")
    joined = L.Concatenate()([Twice()(a), b])
    model = tf.keras.Model([a, b], {"out": L.Dense(1)(joined), "twice": Twice()(b)})
    path = str(tmp_path / "code.keras")
    model.save(path)
    loaded = tf.keras.models.load_model(path)
    assert type(loaded).__name__ == "SavedGraphModel" and "Twice" in loaded.load_reason
    x = _data((4, 3), (4, 2))
    got, want = loaded.predict(x), model.predict(x, verbose=0)
    _same([got["out"], got["twice"]], [want["out"], want["twice"]])
