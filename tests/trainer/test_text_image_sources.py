"""The ``text_csv`` and ``image_directory`` data sources, the TextVectorization preprocessing
they use, and the text and image configs in configs/ on the example script's data."""
import importlib.util
import json
import re

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.training.run_config import parse_config
from tapeflow.training.data_sources import load_data
from tapeflow.training.errors import ConfigError, DataError
from tapeflow.training.text_vectorizer import TextVectorizer

from .helpers import CONFIGS, ROOT, cli


def _example_script():
    spec = importlib.util.spec_from_file_location(
        "make_local_example_data", ROOT / "examples" / "make_local_example_data.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def example_data(tmp_path_factory):
    """The example script's data, smaller: 150 texts, 12 images per class."""
    out = tmp_path_factory.mktemp("local_data")
    _example_script().main(["--out", str(out), "--texts", "150", "--images-per-class", "12"])
    return out


# --- TextVectorization's preprocessing (keras/src/layers/preprocessing/text_vectorization_test.py)
def test_adapt_flow():
    """Keras: TextVectorizationTest::test_adapt_flow"""
    layer = TextVectorizer(max_tokens=5000, output_sequence_length=4)
    layer.adapt(["foo bar", "bar baz", "baz bada boom"])
    np.testing.assert_array_equal(layer(["foo qux bar", "qux baz"]), [[4, 1, 3, 0], [1, 2, 0, 0]])


def test_fixed_vocabulary():
    """Keras: TextVectorizationTest::test_fixed_vocabulary and ::test_set_vocabulary"""
    layer = TextVectorizer(max_tokens=5000, output_sequence_length=4,
                           vocabulary=["baz", "bar", "foo"])
    np.testing.assert_array_equal(layer(["foo qux bar", "qux baz"]), [[4, 1, 3, 0], [1, 2, 0, 0]])
    layer = TextVectorizer(max_tokens=5000, output_sequence_length=4)
    layer.set_vocabulary(["baz", "bar", "foo"])
    np.testing.assert_array_equal(layer(["foo qux bar", "qux baz"]), [[4, 1, 3, 0], [1, 2, 0, 0]])


@pytest.mark.parametrize("standardize, vocabulary, text, expected", [
    # Keras: TextVectorizationTest::test_lower_and_strip_punctuation_standardization
    ("lower_and_strip_punctuation", ["hello", "world", "this", "is", "nice", "test"],
     "Hello, World!. This is just a nice test!", [2, 3, 4, 5, 1, 1, 6, 7]),
    # Keras: TextVectorizationTest::test_lower_standardization
    ("lower", ["hello,", "hello", "world", "this", "is", "nice", "test"],
     "Hello, World!. This is just a nice test!", [2, 1, 5, 6, 1, 1, 7, 1]),
    # Keras: TextVectorizationTest::test_strip_punctuation_standardization
    ("strip_punctuation", ["Hello", "World", "Test"], "Hello, World! Test.", [2, 3, 4]),
    # Keras: TextVectorizationTest::test_no_standardization
    (None, ["Hello", "world"], "Hello hello", [2, 1]),
])
def test_standardization(standardize, vocabulary, text, expected):
    layer = TextVectorizer(standardize=standardize, vocabulary=vocabulary)
    np.testing.assert_array_equal(layer([text]), [expected])


def test_max_tokens_and_vocabulary():
    """Keras: TextVectorizationTest::test_max_tokens, ::test_get_vocabulary,
    ::test_vocabulary_size"""
    layer = TextVectorizer(max_tokens=5)
    layer.adapt(["a b c d e f g h i j"])
    assert len(layer.get_vocabulary()) == 5
    layer = TextVectorizer(vocabulary=["foo", "bar", "baz"])
    assert layer.get_vocabulary()[:2] == ["", "[UNK]"] and layer.vocabulary_size() == 5


# --- the text_csv source ------------------------------------------------------------------------
def _text_data(path, **options):
    data = {"source": "text_csv", "path": str(path), "sequence_length": 6,
            "split": {"test_size": 0.25, "valid_size": 0, "seed": 0}, **options}
    return parse_config({"data": data, "model": {"layers": [{"Dense": {"units": 1}}]}}).data


def test_text_csv_vocabulary_comes_from_the_training_split_alone(tmp_path):
    rows = [f"common word{i} row,{'ab'[i % 2]}" for i in range(8)]
    (tmp_path / "t.csv").write_text("text,label\n" + "\n".join(rows) + "\n")
    dataset = load_data(_text_data("t.csv", max_tokens=50), tmp_path)
    assert dataset.n_classes == 2 and dataset.x_train.dtype == np.int32
    assert dataset.x_train.shape == (6, 6) and dataset.x_test.shape == (2, 6)
    # "common" and "row" are in every text, a tie: Keras orders it "row" (2), "common" (3);
    # each test text's own word is unknown (1): the vocabulary never saw the test split
    np.testing.assert_array_equal(dataset.x_test[:, [0, 2]], [[3, 2], [3, 2]])
    np.testing.assert_array_equal(dataset.x_test[:, 1], [1, 1])
    assert (dataset.x_train[:, 1] > 3).all() and (dataset.x_train[:, 3:] == 0).all()
    # labels a/b are class ids 0/1, the same rows as the numeric csv source's split
    x_ids = np.array([int(re.search(r"\d+", t).group()) for t in rows])
    from sklearn.model_selection import train_test_split
    train, test = train_test_split(x_ids, test_size=0.25, random_state=0)
    np.testing.assert_array_equal(dataset.y_test[:, 0], test % 2)


@pytest.mark.parametrize("csv_text, options, expected", [
    ("text,label\nhi,a\n", {"label": "topic"},
     "t.csv: data.label names column 'topic', which is not in the header (text, label)"),
    ("text,label\nhi,a\nho,\nhu,b\nha,a\n", {}, "t.csv: column 'label' has an empty label (row 3)"),
    ("text,label\nhi,a\n", {}, "t.csv: 1 rows are too few"),
])
def test_text_csv_errors_name_the_file_and_column(tmp_path, csv_text, options, expected):
    (tmp_path / "t.csv").write_text(csv_text)
    with pytest.raises(DataError, match=re.escape(expected)):
        load_data(_text_data("t.csv", **options), tmp_path)


def test_text_csv_options_are_checked_at_their_key():
    with pytest.raises(ConfigError, match=r"data\.max_tokens: Input should be greater than or "
                                          r"equal to 3 \(got 2\)"):
        _text_data("t.csv", max_tokens=2)
    with pytest.raises(ConfigError, match=r"data\.sequence_length: required, but missing"):
        parse_config({"data": {"source": "text_csv", "path": "t.csv"},
                      "model": {"layers": [{"Dense": {"units": 1}}]}})


# --- the image_directory source -----------------------------------------------------------------
def test_image_directory_reads_as_image_dataset_from_directory(example_data):
    config = parse_config({"data": {"source": "image_directory", "path": "shapes",
                                    "image_size": [8, 8], "color_mode": "grayscale",
                                    "split": {"test_size": 0.25, "valid_size": 0.25, "seed": 1}},
                           "model": {"layers": [{"Dense": {"units": 1}}]}}).data
    dataset = load_data(config, example_data)
    assert dataset.n_classes == 3 and dataset.x_train.shape[1:] == (8, 8, 1)
    assert len(dataset.x_train) + len(dataset.x_valid) + len(dataset.x_test) == 36
    keras = tf.keras.utils.image_dataset_from_directory(
        str(example_data / "shapes"), image_size=(8, 8), color_mode="grayscale",
        shuffle=False, batch_size=None, verbose=False)
    images = np.stack([np.asarray(x) for x, _ in keras])
    labels = np.array([int(np.asarray(y)) for _, y in keras])
    every = np.concatenate([dataset.x_train, dataset.x_valid, dataset.x_test])
    every_label = np.concatenate([dataset.y_train, dataset.y_valid, dataset.y_test])[:, 0]
    order = np.lexsort(every.reshape(len(every), -1).T)
    expected = np.lexsort(images.reshape(len(images), -1).T)
    np.testing.assert_array_equal(every[order], images[expected])
    np.testing.assert_array_equal(every_label[order], labels[expected])


def test_image_directory_without_class_folders_is_refused(tmp_path):
    (tmp_path / "only").mkdir()
    config = parse_config({"data": {"source": "image_directory", "path": "."},
                           "model": {"layers": [{"Dense": {"units": 1}}]}}).data
    with pytest.raises(DataError, match=r"found 0 images in 1 class folders"):
        load_data(config, tmp_path)


# --- the configs ----------------------------------------------------------------------------------
def test_image_classifier_config_trains_in_process(example_data, tmp_path):
    run = tf.train(CONFIGS / "image_classifier.yaml", output=tmp_path / "run", verbose=False,
                   overrides=[f"data.path={example_data / 'shapes'}", "training.epochs=2",
                              "checkpoint.every=2"])
    assert set(run.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert len(run.history["loss"]) == 2 and run.history["loss"][1] < run.history["loss"][0]
    assert run.model.inputs[0].shape[1:] == (16, 16, 1)
    # the run directory serves evaluate (its data read again); predict names what it takes
    from tapeflow.training.checkpoint import resolve_checkpoint
    from tapeflow.training.errors import UserError
    from tapeflow.training.inference import evaluate_checkpoint, predict_csv
    ckpt = resolve_checkpoint(run.run_dir)
    assert evaluate_checkpoint(ckpt) == pytest.approx(run.test_metrics, abs=1e-6)
    (tmp_path / "rows.csv").write_text("pixels\n1\n")
    with pytest.raises(UserError, match=r"its model takes images \(height, width, channels\), "
                                        r"not a CSV file's numeric columns"):
        predict_csv(ckpt, tmp_path / "rows.csv", tmp_path / "out.csv")


@pytest.mark.child_process
def test_text_classifier_config_through_the_command_line(example_data, tmp_path):
    out = tmp_path / "run"
    result = cli("train", CONFIGS / "text_classifier.yaml", "--output", out,
                 "--set", f"data.path={example_data / 'texts.csv'}", "--set", "training.epochs=3",
                 "--set", "training.batch_size=8")  # the smaller data: more, smaller steps
    assert result.returncode == 0, result.stderr
    accuracy = float(re.search(r"^test: loss: [0-9.]+ - accuracy: ([0-9.]+)$", result.stdout,
                               re.M).group(1))
    assert accuracy >= 0.9
    assert json.loads((out / "test_metrics.json").read_text())["accuracy"] == \
        pytest.approx(accuracy, abs=1e-4)


def test_a_layers_model_on_token_ids_must_not_normalize_them(example_data, tmp_path):
    config = {"data": {"source": "text_csv", "path": str(example_data / "texts.csv"),
                       "sequence_length": 4, "max_tokens": 20},
              "model": {"layers": [{"Embedding": {"input_dim": 20, "output_dim": 2}},
                                   {"GlobalAveragePooling1D": {}}, {"Dense": {"units": 3}}]},
              "loss": "sparse_categorical_crossentropy"}
    with pytest.raises(ConfigError, match=r"config: model\.normalize: the data are token ids"):
        tf.train(config, output=tmp_path / "run", verbose=False)


def test_a_text_run_keeps_its_vocabulary_and_predicts_from_raw_texts(example_data, tmp_path):
    from tapeflow.training.checkpoint import resolve_checkpoint
    from tapeflow.training.inference import predict_csv
    run = tf.train(CONFIGS / "text_classifier.yaml", output=tmp_path / "run", verbose=False,
                   overrides=[f"data.path={example_data / 'texts.csv'}", "training.epochs=1",
                              "checkpoint.every=1"])
    config = parse_config(run.config)
    dataset = load_data(config.data, ".")
    vocabulary = (tmp_path / "run" / "vocabulary.txt").read_text().splitlines()
    assert ["", *vocabulary] == list(dataset.vocabulary) and vocabulary[0] == "[UNK]"
    texts = ["The ROCKET left orbit!", "a new recipe with garlic, butter"]
    (tmp_path / "texts.csv").write_text("label,text\n" + "".join(f"x,{t!r}\n".replace("'", '"')
                                                                  for t in texts))
    y = predict_csv(resolve_checkpoint(run.run_dir), tmp_path / "texts.csv", tmp_path / "y.csv")
    ids = TextVectorizer(200, 16, vocabulary=vocabulary)(texts)
    np.testing.assert_array_equal(y, run.model.predict(ids, verbose=0))
    assert ids[0, 0] > 1 and ids[0, 1] > 1  # the words were known: not all [UNK]
