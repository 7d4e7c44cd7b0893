"""Configs an adversary or an unlucky user writes (issue 21, groups 7 and 8): each is one
ConfigError naming the file, the line or the key, never a hang, a memory blow-up or a traceback."""
import pytest
import yaml

from tapeflow.training.run_config import load_config, parse_config
from tapeflow.training.errors import ConfigError
from tapeflow.training.safe_yaml import MAX_BYTES

from .helpers import assert_user_error, cli, small_config, write_config

SMALL_YAML = yaml.safe_dump(small_config(), sort_keys=False)
ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join(['*' + chr(97 + i)] * 10)}]\n" for i in range(8))


def _load_error(tmp_path, text):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_config(path)
    return str(info.value)


@pytest.mark.parametrize("text, expected", [
    (ALIAS_BOMB, "run.yaml: line 5: the document expands to more than 100,000 values"),
    ("extra: &r [*r]\n", "run.yaml: line 1: an alias inside the value it names"),
    ("a: " + "[" * 70 + "]" * 70 + "\n", "run.yaml: line 1: nested more than 64 levels deep"),
    ("a: " + "[" * 3000 + "]" * 3000 + "\n", "run.yaml: nested more than 64 levels deep"),
    ("training: {seed: " + "9" * 5000 + "}\n", "run.yaml: line 1: an integer of 5000 digits"),
    (SMALL_YAML + "training: {epochs: 1}\n",
     "duplicate key 'training' (first given on line"),
])
def test_a_hostile_yaml_document_is_one_message_naming_the_line(tmp_path, text, expected):
    assert expected in _load_error(tmp_path, text)


def test_aliases_and_merge_keys_within_the_limits_still_work(tmp_path):
    text = ("base: &base {epochs: 2, batch_size: 64}\n"
            + SMALL_YAML.replace("training:\n", "training:\n  <<: *base\n", 1))
    # a merge key's mapping may be overridden by the keys beside it: not a duplicate
    doc = yaml.safe_load(text)
    del doc["base"]
    assert parse_config(doc).training.epochs == 4


def test_a_file_past_the_size_limit_is_refused_unread(tmp_path):
    message = _load_error(tmp_path, SMALL_YAML + "#" * MAX_BYTES)
    assert message.startswith("run.yaml: larger than 1024 kB")


def test_a_dict_that_holds_itself_is_refused():
    doc = small_config()
    doc["data"]["loop"] = doc
    with pytest.raises(ConfigError, match="nested more than 64 levels deep"):
        parse_config(doc, "run.yaml")


@pytest.mark.parametrize("change, expected", [
    ({"training": {"seed": -1}}, "training.seed: Input should be greater than or equal to 0"),
    ({"training": {"seed": 2 ** 32}}, "training.seed: Input should be less than 4294967296"),
    ({"data": {"source": "california_housing", "split": {"seed": -1}}},
     "data.split.seed: Input should be greater than or equal to 0"),
    ({"optimizer": {"schedule": {"name": "ExponentialDecay", "options": {
        "initial_learning_rate": -0.001, "decay_steps": 10, "decay_rate": 0.9}}}},
     "run.yaml: optimizer.schedule: options.initial_learning_rate: -0.001 is not in (0, inf)"),
    ({"optimizer": {"schedule": {"name": "PiecewiseConstantDecay", "options": {
        "boundaries": [10], "values": [0.1, -0.01]}}}},
     "options.values.1: -0.01 is not in (0, inf)"),
    ({"optimizer": {"name": "adam", "options": {"epsilon": -1.0}}},
     "run.yaml: optimizer: options.epsilon: -1.0 is not in (0, inf)"),
    ({"optimizer": {"name": "adam", "options": {"beta_1": 2.0}}},
     "options.beta_1: 2.0 is not in [0, 1)"),
    ({"optimizer": {"name": "adam", "options": {"beta_2": 1}}},
     "options.beta_2: 1 is not in [0, 1)"),
    ({"optimizer": {"name": "adam", "options": {"beta_2": 10 ** 400}}},  # from Python, not YAML
     "options.beta_2: 1000"),
    ({"loss": {"name": "Huber", "delta": -1.0}}, "run.yaml: loss.delta: -1.0 is not in (0, inf)"),
    ({"optimizer": {"learning_rate": float("inf")}},
     "optimizer.learning_rate: Input should be a finite number"),
])
def test_numbers_out_of_range_are_refused_where_the_config_names_them(change, expected):
    with pytest.raises(ConfigError) as info:
        parse_config(small_config(**change), "run.yaml")
    assert expected in str(info.value)


def test_in_range_options_still_build(tmp_path):
    config = parse_config(small_config(optimizer={"name": "adam", "options": {
        "beta_1": 0.0, "beta_2": 0.999, "epsilon": 1e-7}}, loss={"name": "Huber", "delta": 0.5},
        training={"seed": 2 ** 32 - 1}))
    assert config.training.seed == 2 ** 32 - 1 and config.loss["delta"] == 0.5


@pytest.mark.child_process
@pytest.mark.parametrize("extra, fragment", [
    (("--set", "a." * 100 + "b=1"), "a key path of more than 64 parts"),
    (("--set", "training.seed=-1"), "training.seed: Input should be greater than or equal to 0"),
])
def test_the_command_line_says_one_line_and_exits_2(tmp_path, extra, fragment):
    config = write_config(tmp_path / "run.yaml", small_config())
    assert_user_error(cli("train", config, "--output", tmp_path / "run", *extra), fragment)
    assert not (tmp_path / "run").exists()


@pytest.mark.child_process
def test_the_alias_bomb_through_the_command_line(tmp_path):
    config = tmp_path / "bomb.yaml"
    config.write_text(ALIAS_BOMB)
    assert_user_error(cli("train", config, "--output", tmp_path / "run", timeout=60),
                      "bomb.yaml: line 5: the document expands to more than 100,000 values")


def test_the_weight_budget_counts_every_weight_and_only_inside_its_block():
    import numpy as np

    import tapeflow as tf
    from tapeflow.layers.weight_budget import weight_budget
    with weight_budget(4 * (8 * 100 + 100)):  # float32 kernel and bias of one Dense(100) on 8
        tf.keras.layers.Dense(100).build((None, 8))
        with pytest.raises(ValueError, match=r"dense_1.kernel: a weight of shape \(8, 1\)"):
            tf.keras.layers.Dense(1).build((None, 8))
    layer = tf.keras.layers.Dense(100)
    layer.build((None, 8))  # no block: no cap
    assert np.shape(layer.kernel) == (8, 100)
