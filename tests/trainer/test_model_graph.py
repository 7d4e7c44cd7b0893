"""A config's functional ``model.graph`` and ``model.keras_config`` (training/model_graph.py)."""
import json
import re
import zipfile

import numpy as np
import pytest
import yaml

import tapeflow as tf
from tapeflow.core.context import reset
from tapeflow.ops import random as random_ops
from tapeflow.training.run_config import parse_config
from tapeflow.training.errors import ConfigError
from tapeflow.training.model_graph import build_graph, build_keras_config

TWO_INPUTS = yaml.safe_load("""
inputs:
  - {name: words, shape: [6], dtype: int32}
  - {name: numbers, shape: [3]}
layers:
  - {name: embed, inputs: words, Embedding: {input_dim: 20, output_dim: 4}}
  - {name: recurrent, inputs: embed, Bidirectional: {layer: {LSTM: {units: 3}}}}
  - {name: attend, inputs: [embed, embed], MultiHeadAttention: {num_heads: 2, key_dim: 2}}
  - {name: pooled, inputs: attend, GlobalAveragePooling1D: {}}
  - {name: joined, inputs: [recurrent, pooled, numbers], Concatenate: {}}
  - {name: hidden, inputs: joined, Dense: {units: 5, activation: relu}}
  - {name: logits, inputs: hidden, Dense: {units: 2}}
outputs: logits
""")


def _config(graph, where="test.yaml"):
    return parse_config({"data": {"source": "digits"}, "model": {"graph": graph}}, where)


def _python_model():
    """TWO_INPUTS written in Python, as a user would."""
    words = tf.keras.Input(shape=(6,), dtype="int32", name="words")
    numbers = tf.keras.Input(shape=(3,), name="numbers")
    embed = tf.keras.layers.Embedding(20, 4, name="embed")(words)
    recurrent = tf.keras.layers.Bidirectional(tf.keras.layers.LSTM(3), name="recurrent")(embed)
    attend = tf.keras.layers.MultiHeadAttention(num_heads=2, key_dim=2, name="attend")(embed,
                                                                                        embed)
    pooled = tf.keras.layers.GlobalAveragePooling1D(name="pooled")(attend)
    joined = tf.keras.layers.Concatenate(name="joined")([recurrent, pooled, numbers])
    hidden = tf.keras.layers.Dense(5, activation="relu", name="hidden")(joined)
    logits = tf.keras.layers.Dense(2, name="logits")(hidden)
    return tf.keras.Model([words, numbers], logits, name="model")


def _seeded(make):
    reset()
    random_ops.set_seed(3)
    return make()


def test_a_two_input_graph_in_yaml_equals_the_model_built_in_python():
    from_yaml = _seeded(lambda: build_graph(_config(TWO_INPUTS).model.graph, "test.yaml"))
    in_python = _seeded(_python_model)
    rng = np.random.default_rng(0)
    x = [rng.integers(0, 20, (5, 6)).astype("int32"), rng.normal(size=(5, 3)).astype("float32")]
    assert [layer.name for layer in from_yaml.layers] == [layer.name for layer in in_python.layers]
    np.testing.assert_array_equal(from_yaml.predict(x, verbose=0), in_python.predict(x, verbose=0))
    # a different seed gives different weights: the equality above is not a constant output
    random_ops.set_seed(4)
    np.testing.assert_raises(AssertionError, np.testing.assert_array_equal,
                             _python_model().predict(x, verbose=0), in_python.predict(x, verbose=0))


def test_a_graph_may_have_several_outputs():
    graph = _with(lambda g: g.update(outputs=["logits", "hidden"]))
    model = build_graph(_config(graph).model.graph, "test.yaml")
    assert [tuple(t.shape) for t in model.outputs] == [(None, 2), (None, 5)]
    logits, hidden = model.predict([np.ones((3, 6), "int32"), np.ones((3, 3), "float32")],
                                   verbose=0)
    assert logits.shape == (3, 2) and hidden.shape == (3, 5)


def test_the_resolved_config_keeps_the_written_form_and_reads_back():
    resolved = _config(TWO_INPUTS).resolved()
    layers = resolved["model"]["graph"]["layers"]
    assert layers[1] == {"name": "recurrent", "inputs": "embed",
                         "Bidirectional": {"layer": {"LSTM": {"units": 3}}}}
    assert parse_config(resolved).model.graph == _config(TWO_INPUTS).model.graph


def _with(edit):
    graph = json.loads(json.dumps(TWO_INPUTS))
    edit(graph)
    return graph


def _add_unused_chain(graph):
    """Two layers after ``hidden`` that no output uses (the first feeds the second)."""
    graph["layers"][6:6] = [{"name": "spare", "inputs": "hidden", "Dense": {"units": 1}},
                            {"name": "spare_2", "inputs": "spare", "Dense": {"units": 1}}]


def _rename_input(graph, i, name):
    graph["layers"][i]["inputs"] = name


@pytest.mark.parametrize("edit, expected", [
    (lambda g: _rename_input(g, 3, "dense_9"),
     "test.yaml: model.graph.layers.3.inputs: unknown layer 'dense_9': no input or earlier layer"),
    (lambda g: _rename_input(g, 1, "hidden"),
     "model.graph.layers.1.inputs: unknown layer 'hidden': a layer that comes later"),
    (lambda g: g["layers"][2].update(name="embed"),
     "model.graph.layers.2.name: 'embed' names two inputs or layers (first at layers.0.name)"),
    (lambda g: g.update(outputs=["logits", "dense_2"]),
     "model.graph.outputs: unknown layer 'dense_2'"),
    (_add_unused_chain, "model.graph.layers.6.name: layer 'spare' leads to no output"),
    (lambda g: g["layers"][0].update(Embedding={"input_dim": 20, "output_dimm": 4}),
     "model.graph.layers.0.Embedding.output_dimm: unknown argument of Embedding; did you mean "
     "'output_dim'?"),
    (lambda g: g["layers"][1].update(Bidirectional={"layer": {"LSTMM": {"units": 3}}}),
     "model.graph.layers.1.Bidirectional.layer.LSTMM: unknown layer; did you mean 'LSTM'?"),
    (lambda g: g["layers"][5].update(Dense={"units": 5, "name": "other"}),
     "model.graph.layers.5.Dense.name: the layer's name is its 'name:' key"),
    (lambda g: g["layers"][6].update(Lambda={"function": "x"}),
     "model.graph.layers.6: a layer is {name: ..., inputs: ..., LayerName: {arguments}}"),
    (lambda g: g["layers"].__setitem__(6, {"name": "logits", "inputs": "hidden",
                                           "Lambda": {"function": "x"}}),
     "model.graph.layers.6.Lambda: unknown layer"),
    (lambda g: g["inputs"][0].update(dtype="string"),
     "model.graph.inputs.0.dtype: Input should be 'float16'"),
])
def test_graph_errors_name_their_location(edit, expected):
    with pytest.raises(ConfigError) as info:
        _config(_with(edit))
    assert expected in str(info.value)


def test_several_problems_are_reported_together():
    def edit(graph):
        _rename_input(graph, 3, "dense_9")
        graph["outputs"] = "dense_10"
    message = str(pytest.raises(ConfigError, _config, _with(edit)).value)
    assert "layers.3.inputs: unknown layer 'dense_9'" in message
    assert "outputs: unknown layer 'dense_10'" in message


def test_a_layer_that_refuses_its_inputs_is_named_with_their_shapes():
    graph = _with(lambda g: g["layers"][4].update(inputs=["recurrent", "attend", "numbers"]))
    graph["layers"].pop(3)  # the attention's sequences are no longer pooled
    with pytest.raises(ConfigError, match=r"model\.graph\.layers\.3\.Concatenate: on recurrent "
                                          r"\(None, 6\), attend \(None, 6, 4\), numbers "
                                          r"\(None, 3\): "):
        build_graph(_config(graph).model.graph, "test.yaml")


def test_model_takes_exactly_one_kind_of_description():
    with pytest.raises(ConfigError, match="give exactly one of 'layers'"):
        parse_config({"data": {"source": "digits"},
                      "model": {"graph": TWO_INPUTS, "layers": [{"Dense": {"units": 1}}]}})


# --- keras_config -------------------------------------------------------------------------------
# A model's config as Keras 3 writes it into a .keras file's config.json (Input(4) -> Dense(3)).
KERAS3_CONFIG = {
    "module": "keras.src.models.functional", "class_name": "Functional",
    "registered_name": "Functional", "build_config": {"input_shape": None},
    "compile_config": None,
    "config": {"name": "functional", "trainable": True, "layers": [
        {"module": "keras.layers", "class_name": "InputLayer", "registered_name": None,
         "config": {"batch_shape": [None, 4], "dtype": "float32", "sparse": False,
                    "name": "input_layer"}, "name": "input_layer", "inbound_nodes": []},
        {"module": "keras.layers", "class_name": "Dense", "registered_name": None,
         "build_config": {"input_shape": [None, 4]}, "name": "dense",
         "config": {"name": "dense", "trainable": True,
                    "dtype": {"module": "keras", "class_name": "DTypePolicy",
                              "config": {"name": "float32"}, "registered_name": None},
                    "units": 3, "activation": "relu", "use_bias": True,
                    "kernel_initializer": {"module": "keras.initializers",
                                           "class_name": "GlorotUniform",
                                           "config": {"seed": None}, "registered_name": None},
                    "bias_initializer": {"module": "keras.initializers", "class_name": "Zeros",
                                         "config": {}, "registered_name": None},
                    "kernel_regularizer": None, "bias_regularizer": None,
                    "kernel_constraint": None, "bias_constraint": None},
         "inbound_nodes": [{"args": [{"class_name": "__keras_tensor__", "config": {
             "shape": [None, 4], "dtype": "float32",
             "keras_history": ["input_layer", 0, 0]}}], "kwargs": {}}]}],
        "input_layers": [["input_layer", 0, 0]], "output_layers": [["dense", 0, 0]]}}


def _keras3_lambda():
    """KERAS3_CONFIG with its Dense replaced by a Lambda whose function is Python bytecode,
    as Keras 3 saves one (marshal, base64)."""
    config = json.loads(json.dumps(KERAS3_CONFIG))
    layer = config["config"]["layers"][1]
    layer.update(class_name="Lambda", name="lambda")
    layer["config"] = {"name": "lambda", "trainable": True, "arguments": {},
                       "function": {"class_name": "__lambda__",
                                    "config": {"code": "4wEAAAAAAAAAAAAAAAEAAAAD", "defaults": None,
                                               "closure": None}},
                       "output_shape": None}
    config["config"]["output_layers"] = [["lambda", 0, 0]]
    return config


def _keras3_sparse_input():
    config = json.loads(json.dumps(KERAS3_CONFIG))
    config["config"]["layers"][0]["config"]["sparse"] = True
    return config


def test_a_keras3_config_builds_inline_from_json_and_from_a_keras_file(tmp_path):
    (tmp_path / "config.json").write_text(json.dumps(KERAS3_CONFIG))
    with zipfile.ZipFile(tmp_path / "model.keras", "w") as archive:
        archive.writestr("config.json", json.dumps(KERAS3_CONFIG))
        archive.writestr("metadata.json", "{}")
    for spec in (KERAS3_CONFIG, "config.json", "model.keras"):
        config = parse_config({"data": {"source": "digits"}, "model": {"keras_config": spec}})
        model = build_keras_config(config.model.keras_config, "test.yaml", str(tmp_path))
        assert [layer.name for layer in model.layers] == ["input_layer", "dense"]
        assert model.layers[1].units == 3 and tuple(model.outputs[0].shape) == (None, 3)


def test_a_model_get_config_round_trips_through_keras_config():
    """Keras: models/functional_test.py::FunctionalTest::test_serialization (a model rebuilt
    from its get_config() predicts as the original once given its weights)"""
    model = _seeded(_python_model)
    config = json.loads(json.dumps({"class_name": "Functional", "config": model.get_config()}))
    again = build_keras_config(config, "test.yaml", ".")
    again.set_weights(model.get_weights())
    x = [np.ones((2, 6), "int32"), np.ones((2, 3), "float32")]
    np.testing.assert_array_equal(again.predict(x, verbose=0), model.predict(x, verbose=0))


@pytest.mark.parametrize("spec, expected", [
    ({"class_name": "Functional", "config": {"name": "m", "layers": [
        {"class_name": "os.system", "config": {"name": "x"}, "name": "x"}],
        "input_layers": [], "output_layers": []}},
     "model.keras_config: cannot build the model it describes: Unknown layer 'os.system'"),
    (_keras3_lambda(), "Lambda 'lambda': its function is"),
    (_keras3_sparse_input(), "InputLayer: sparse=True inputs are not supported"),
    ({"config": {}}, "model.keras_config: a model config is a mapping {class_name: ..."),
    ("missing.json", "model.keras_config: no such file"),
])
def test_a_keras_config_imports_nothing_and_names_what_is_wrong(spec, expected, tmp_path):
    config = parse_config({"data": {"source": "digits"}, "model": {"keras_config": spec}})
    with pytest.raises(ConfigError, match=expected.replace("{", r"\{").replace(".", r"\.")):
        build_keras_config(config.model.keras_config, "test.yaml", str(tmp_path))


def test_a_keras_file_without_config_json_or_too_deep_is_refused(tmp_path):
    with zipfile.ZipFile(tmp_path / "model.keras", "w") as archive:
        archive.writestr("metadata.json", "{}")
    (tmp_path / "deep.json").write_text("[" * 100000 + "]" * 100000)
    for name, expected in (("model.keras", "cannot read model.keras (KeyError"),
                           ("deep.json", "cannot read deep.json (RecursionError")):
        with pytest.raises(ConfigError, match=re.escape(expected)):
            build_keras_config(name, "test.yaml", str(tmp_path))


def test_the_trainer_refuses_a_graph_its_data_cannot_feed(tmp_path):
    config = {"data": {"source": "digits"}, "model": {"graph": TWO_INPUTS},
              "loss": "sparse_categorical_crossentropy"}
    with pytest.raises(ConfigError, match=r"config: model\.graph: the model has 2 input\(s\) and "
                                          r"1 output\(s\); feed them with data\.inputs and "):
        tf.train(config, output=tmp_path / "run", verbose=False)
    one_input = _with(lambda g: g["layers"].__setitem__(slice(0, None), [
        {"name": "logits", "inputs": "words", "Dense": {"units": 10}}]))
    one_input["inputs"] = [{"name": "words", "shape": [6]}]
    with pytest.raises(ConfigError, match=r"model\.graph: on the data's examples of shape "
                                          r"\(64,\) \(float32\): "):
        tf.train(dict(config, model={"graph": one_input}), output=tmp_path / "run2",
                 verbose=False)
