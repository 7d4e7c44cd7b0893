"""keras.utils dataset makers: timeseries_dataset_from_array, text_dataset_from_directory and
image_dataset_from_directory, ported from Keras's ``keras/src/utils/*_dataset_utils_test.py``
(the "tf" format) with the values they assert.  Folders are written under ``tmp_path``."""
import os
import random
import string
import sys

import numpy as np
import pytest

import tapeflow as tf

utils = tf.keras.utils


# --- timeseries_dataset_from_array -------------------------------------------------------------
def test_timeseries_basics():
    # Keras: timeseries_dataset_utils_test.py::test_basics
    data = np.arange(100)
    dataset = utils.timeseries_dataset_from_array(data, data * 2, sequence_length=9,
                                                  batch_size=5)
    batches = list(dataset.as_numpy_iterator())
    assert len(batches) == 19
    for i, (inputs, targets) in enumerate(batches):
        assert inputs.shape == ((5, 9) if i < 18 else (2, 9))
        np.testing.assert_array_equal(targets, inputs[:, 0] * 2)
        for j in range(len(inputs)):
            np.testing.assert_array_equal(inputs[j], np.arange(i * 5 + j, i * 5 + j + 9))
    assert [list(s.shape) for s in dataset.element_spec] == [[None, 9], [None]]


def test_timeseries_regression_and_no_targets():
    # Keras: timeseries_dataset_utils_test.py::test_timeseries_regression, ::test_no_targets
    data, offset = np.arange(10), 3
    batches = list(utils.timeseries_dataset_from_array(
        data, data[offset:], sequence_length=offset, batch_size=1).as_numpy_iterator())
    assert len(batches) == 7
    for i, (inputs, targets) in enumerate(batches):
        assert inputs.shape == (1, 3) and targets[0] == data[offset + i]
        np.testing.assert_array_equal(inputs[0], data[i:i + offset])
    batches = list(utils.timeseries_dataset_from_array(
        np.arange(50), None, sequence_length=10, batch_size=5).as_numpy_iterator())
    assert len(batches) == 9 and batches[-1].shape == (1, 10)
    for i, batch in enumerate(batches):
        for j in range(len(batch)):
            np.testing.assert_array_equal(batch[j], np.arange(i * 5 + j, i * 5 + j + 10))


def test_timeseries_shuffle():
    # Keras: timeseries_dataset_utils_test.py::test_shuffle
    data = np.arange(10)

    def make():
        return utils.timeseries_dataset_from_array(data, data * 2, sequence_length=5,
                                                   batch_size=1, shuffle=True, seed=123)
    dataset = make()
    x, y = next(iter(dataset.take(1)))
    assert not np.array_equal(x.numpy(), np.arange(0, 5)[None])
    np.testing.assert_array_equal(x.numpy()[:, 0] * 2, y.numpy())
    second, _ = next(iter(dataset.take(1)))         # a new epoch: another order
    assert not np.array_equal(second.numpy(), x.numpy())
    again, _ = next(iter(make().take(1)))            # the same seed: the same first epoch
    np.testing.assert_array_equal(again.numpy(), x.numpy())


def test_timeseries_sampling_rate_stride_and_range():
    # Keras: timeseries_dataset_utils_test.py::test_sampling_rate, ::test_sequence_stride,
    # ::test_start_and_end_index, ::test_not_batched
    data = np.arange(100)
    batches = list(utils.timeseries_dataset_from_array(
        data, data * 2, sequence_length=9, batch_size=5, sampling_rate=2).as_numpy_iterator())
    assert len(batches) == 17 and batches[-1][0].shape == (4, 9)
    for i, (inputs, targets) in enumerate(batches):
        np.testing.assert_array_equal(inputs[:, 0] * 2, targets)
        for j in range(len(inputs)):
            np.testing.assert_array_equal(inputs[j], np.arange(i * 5 + j, i * 5 + j + 18, 2))
    batches = list(utils.timeseries_dataset_from_array(
        data, data * 2, sequence_length=9, batch_size=5, sequence_stride=3).as_numpy_iterator())
    assert len(batches) == 7 and batches[-1][0].shape == (1, 9)
    for i, (inputs, _) in enumerate(batches):
        for j in range(len(inputs)):
            start = i * 15 + j * 3
            np.testing.assert_array_equal(inputs[j], np.arange(start, start + 9))
    for batch in utils.timeseries_dataset_from_array(
            data, None, sequence_length=9, batch_size=5, sequence_stride=3, sampling_rate=2,
            start_index=10, end_index=90):
        assert np.max(batch.numpy()) < 90 and np.min(batch.numpy()) > 9
    sample = next(iter(utils.timeseries_dataset_from_array(
        data, None, sequence_length=9, batch_size=None, shuffle=True)))
    assert len(sample.shape) == 1
    assert tf.keras.preprocessing.timeseries_dataset_from_array is \
        utils.timeseries_dataset_from_array                     # tf.keras 2 keeps them there too


def test_timeseries_errors():
    # Keras: timeseries_dataset_utils_test.py::test_errors
    make = utils.timeseries_dataset_from_array
    for kwargs, message in [({"start_index": -1}, "`start_index` must be "),
                            ({"start_index": 11}, "`start_index` must be "),
                            ({"end_index": -1}, "`end_index` must be "),
                            ({"end_index": 11}, "`end_index` must be "),
                            ({"sampling_rate": 0}, "`sampling_rate` must be "),
                            ({"sequence_stride": 0}, "`sequence_stride` must be ")]:
        with pytest.raises(ValueError, match=message):
            make(np.arange(10), None, 3, **kwargs)


# --- text_dataset_from_directory ---------------------------------------------------------------
def _class_paths(root, num_classes, nested_dirs):
    paths = []
    for class_index in range(num_classes):
        directory = f"class_{class_index}"
        class_paths = [directory] + ([os.path.join(directory, "subfolder_1"),
                                      os.path.join(directory, "subfolder_2"),
                                      os.path.join(directory, "subfolder_1", "sub-subfolder")]
                                     if nested_dirs else [])
        for path in class_paths:
            os.mkdir(os.path.join(root, path))
        paths += class_paths
    return paths


def _text_directory(root, num_classes=2, nested_dirs=False, count=16, length=20):
    rng = random.Random(count * 31 + num_classes)
    paths = _class_paths(root, num_classes, nested_dirs)
    for i in range(count):
        with open(os.path.join(root, paths[i % len(paths)], f"text_{i}.txt"), "w") as f:
            f.write("".join(rng.choice(string.ascii_letters) for _ in range(length)))
    return str(root)


def test_text_dataset_standalone_and_binary(tmp_path):
    # Keras: text_dataset_utils_test.py::test_text_dataset_from_directory_standalone,
    # ::test_text_dataset_from_directory_binary
    os.mkdir(tmp_path / "a")
    directory = _text_directory(tmp_path / "a", count=7)
    for i in range(3):
        with open(os.path.join(directory, f"text_{i}.txt"), "w") as f:
            f.write("x" * 20)
    dataset = utils.text_dataset_from_directory(directory, batch_size=5, label_mode=None,
                                                max_length=10, verbose=False)
    batches = list(dataset.as_numpy_iterator())
    assert batches[0].shape == (5,) and dataset.element_spec.dtype == tf.string
    assert len(batches) == 2 and sum(len(b) for b in batches) == 10

    os.mkdir(tmp_path / "b")
    directory = _text_directory(tmp_path / "b")
    texts, labels = next(iter(utils.text_dataset_from_directory(
        directory, batch_size=8, label_mode="int", max_length=10, verbose=False)))
    assert texts.shape == (8,) and len(str(texts[0])) == 10
    assert labels.shape == (8,) and labels.dtype == tf.int32
    dataset = utils.text_dataset_from_directory(directory, batch_size=8, label_mode="binary",
                                                verbose=False)
    assert dataset.map(lambda x, y: x).element_spec == tf.TensorSpec([None], tf.string)
    _, labels = next(iter(dataset))
    assert labels.shape == (8, 1) and labels.dtype == tf.float32
    _, labels = next(iter(utils.text_dataset_from_directory(
        directory, batch_size=8, label_mode="categorical", verbose=False)))
    assert labels.shape == (8, 2) and labels.dtype == tf.float32


def test_text_dataset_multiclass_counts_and_follow_links(tmp_path):
    # Keras: text_dataset_utils_test.py::test_sample_count, ::..._multiclass, ::..._follow_links,
    # ::..._not_batched
    directory = _text_directory(tmp_path, num_classes=4, count=15)
    dataset = utils.text_dataset_from_directory(directory, batch_size=8, label_mode=None,
                                                verbose=False)
    assert sum(len(b) for b in dataset.as_numpy_iterator()) == 15
    texts, labels = next(iter(utils.text_dataset_from_directory(
        directory, batch_size=8, label_mode="categorical", verbose=False)))
    assert texts.shape == (8,) and labels.shape == (8, 4)
    nested = tmp_path / "nested"
    os.mkdir(nested)
    dataset = utils.text_dataset_from_directory(
        _text_directory(nested, count=25, nested_dirs=True), batch_size=8, label_mode=None,
        follow_links=True, verbose=False)
    assert sum(len(b) for b in dataset.as_numpy_iterator()) == 25
    sample = next(iter(utils.text_dataset_from_directory(
        directory, batch_size=None, label_mode=None, verbose=False)))
    assert np.asarray(sample).shape == ()


def test_text_dataset_validation_split_and_manual_labels(tmp_path):
    # Keras: text_dataset_utils_test.py::test_text_dataset_from_directory_validation_split,
    # ::test_text_dataset_from_directory_manual_labels
    os.mkdir(tmp_path / "a")
    directory = _text_directory(tmp_path / "a", count=10)
    kwargs = dict(batch_size=10, validation_split=0.2, seed=1337, verbose=False)
    train = utils.text_dataset_from_directory(directory, subset="training", **kwargs)
    val = utils.text_dataset_from_directory(directory, subset="validation", **kwargs)
    assert len(next(iter(train))[0]) == 8 and len(next(iter(val))[0]) == 2
    assert not set(train.file_paths) & set(val.file_paths)
    both_train, both_val = utils.text_dataset_from_directory(directory, subset="both", **kwargs)
    assert len(next(iter(both_train))[0]) == 8 and len(next(iter(both_val))[0]) == 2
    assert both_train.class_names == ["class_0", "class_1"]
    os.mkdir(tmp_path / "b")
    directory = _text_directory(tmp_path / "b", count=2)
    _, labels = next(iter(utils.text_dataset_from_directory(
        directory, batch_size=8, labels=[0, 1], shuffle=False, verbose=False)))
    assert labels.numpy().tolist() == [0, 1]


def test_text_dataset_errors(tmp_path):
    # Keras: text_dataset_utils_test.py::test_text_dataset_from_directory_errors,
    # ::test_text_dataset_from_directory_no_files
    os.mkdir(tmp_path / "a")
    directory = _text_directory(tmp_path / "a", num_classes=3, count=5)
    make = utils.text_dataset_from_directory
    for kwargs, message in [
            ({"labels": "other"}, "`labels` argument should be"),
            ({"label_mode": "other"}, "`label_mode` argument must be"),
            ({"labels": [0, 0, 1, 1, 1], "class_names": ["class_0", "class_1", "class_2"]},
             'only pass `class_names` if `labels="inferred"`'),
            ({"labels": [0, 0, 1, 1]}, "Expected the lengths of `labels` to match the number "
                                       "of files"),
            ({"class_names": ["class_0", "wrong_class"]}, "`class_names` passed did not match"),
            ({"label_mode": "binary"}, "there must be exactly 2"),
            ({"validation_split": 2}, "`validation_split` must be between 0 and 1"),
            ({"validation_split": 0.2, "subset": "other"},
             '`subset` must be either "training", "validation" or "both"'),
            ({"validation_split": 0.0, "subset": "training"}, "`validation_split` must be set"),
            ({"validation_split": 0.2, "subset": "training"}, "must provide a `seed`")]:
        with pytest.raises(ValueError, match=message):
            make(directory, verbose=False, **kwargs)
    os.mkdir(tmp_path / "empty")
    with pytest.raises(ValueError, match="No text files found"):
        make(_text_directory(tmp_path / "empty", count=0), verbose=False)


# --- image_dataset_from_directory --------------------------------------------------------------
def _image_directory(root, num_classes=2, nested_dirs=False, color_mode="rgb", count=16):
    image_module = pytest.importorskip("PIL.Image")
    rng = np.random.default_rng(count + num_classes)
    channels = {"grayscale": 1, "rgba": 4, "rgb": 3}[color_mode]
    paths = _class_paths(root, num_classes, nested_dirs)
    for i in range(count):
        pixels = rng.integers(0, 256, size=(24, 24, channels)).astype(np.uint8)
        image = image_module.fromarray(pixels[..., 0] if channels == 1 else pixels)
        ext = "jpg" if color_mode == "rgb" else "png"
        image.save(os.path.join(root, paths[i % len(paths)], f"image_{i}.{ext}"))
    return str(root)


def test_image_dataset_no_labels_and_label_modes(tmp_path):
    # Keras: image_dataset_utils_test.py::test_image_dataset_from_directory_no_labels,
    # ::test_image_dataset_from_directory_binary
    os.mkdir(tmp_path / "a")
    directory = _image_directory(tmp_path / "a", count=7)
    image_module = pytest.importorskip("PIL.Image")
    for i in range(3):
        image_module.fromarray(np.zeros((24, 24, 3), np.uint8)).save(
            os.path.join(directory, f"image_{i}.jpg"))
    dataset = utils.image_dataset_from_directory(directory, batch_size=5, image_size=(18, 18),
                                                 labels=None, verbose=False)
    assert dataset.class_names is None
    batches = list(dataset.as_numpy_iterator())
    assert list(batches[0].shape) == [5, 18, 18, 3] and batches[0].dtype == np.float32
    assert len(batches) == 2 and sum(b.shape[0] for b in batches) == 10

    os.mkdir(tmp_path / "b")
    directory = _image_directory(tmp_path / "b")
    for label_mode, label_shape, label_dtype in [("int", [8], tf.int32),
                                                 ("binary", [8, 1], tf.float32),
                                                 ("categorical", [8, 2], tf.float32)]:
        images, labels = next(iter(utils.image_dataset_from_directory(
            directory, batch_size=8, image_size=(18, 18), label_mode=label_mode,
            verbose=False)))
        assert list(images.shape) == [8, 18, 18, 3] and images.dtype == tf.float32
        assert list(labels.shape) == label_shape and labels.dtype == label_dtype
    spec = utils.image_dataset_from_directory(directory, batch_size=8, image_size=(18, 18),
                                              verbose=False).element_spec
    assert list(spec[0].shape) == [None, 18, 18, 3]      # ::test_static_shape_in_graph


def test_image_dataset_color_modes_and_counts(tmp_path):
    # Keras: image_dataset_utils_test.py::test_image_dataset_from_directory_color_modes,
    # ::test_sample_count, ::test_image_dataset_from_directory_follow_links
    for color_mode, channels in [("rgba", 4), ("grayscale", 1)]:
        os.mkdir(tmp_path / color_mode)
        directory = _image_directory(tmp_path / color_mode, num_classes=4, color_mode=color_mode)
        images, _ = next(iter(utils.image_dataset_from_directory(
            directory, batch_size=8, image_size=(18, 18), color_mode=color_mode,
            verbose=False)))
        assert list(images.shape) == [8, 18, 18, channels] and images.dtype == tf.float32
    os.mkdir(tmp_path / "nested")
    dataset = utils.image_dataset_from_directory(
        _image_directory(tmp_path / "nested", count=25, nested_dirs=True, color_mode="rgba"),
        batch_size=8, image_size=(18, 18), label_mode=None, follow_links=True, verbose=False)
    assert sum(b.shape[0] for b in dataset.as_numpy_iterator()) == 25


def test_image_dataset_validation_split_and_manual_labels(tmp_path):
    # Keras: image_dataset_utils_test.py::test_image_dataset_from_directory_validation_split,
    # ::test_image_dataset_from_directory_manual_labels, ::..._no_images
    os.mkdir(tmp_path / "a")
    directory = _image_directory(tmp_path / "a", count=10)
    kwargs = dict(batch_size=10, image_size=(18, 18), validation_split=0.2, seed=1337,
                  verbose=False)
    train, val = utils.image_dataset_from_directory(directory, subset="both", **kwargs)
    assert list(next(iter(train))[0].shape) == [8, 18, 18, 3]
    assert list(next(iter(val))[0].shape) == [2, 18, 18, 3]
    os.mkdir(tmp_path / "b")
    directory = _image_directory(tmp_path / "b", num_classes=1, count=4)
    with pytest.raises(ValueError, match="match the number of files"):
        utils.image_dataset_from_directory(directory, image_size=(18, 18), labels=[0, 1, 0],
                                           shuffle=False, verbose=False)
    dataset = utils.image_dataset_from_directory(directory, batch_size=8, image_size=(18, 18),
                                                 labels=[0, 1, 0, 1], shuffle=False,
                                                 verbose=False)
    assert dataset.class_names == ["0", "1"]
    images, labels = next(iter(dataset))
    assert list(images.shape) == [4, 18, 18, 3] and labels.numpy().tolist() == [0, 1, 0, 1]
    os.mkdir(tmp_path / "empty")
    with pytest.raises(ValueError, match="No images found."):
        utils.image_dataset_from_directory(_image_directory(tmp_path / "empty", count=0),
                                           verbose=False)


def test_image_values_resize_and_crop(tmp_path):
    # Keras: image_dataset_utils_test.py::test_image_dataset_from_directory_crop_to_aspect_ratio
    # (shapes), and the pixels: a PNG read back exactly, resized as tf.image.resize (bilinear,
    # half-pixel centres: a 2x2 image to 4x4 gives these rows)
    image_module = pytest.importorskip("PIL.Image")
    folder = tmp_path / "one" / "a"
    os.makedirs(folder)
    pixels = np.array([[[0, 0, 0], [100, 100, 100]], [[200, 200, 200], [40, 40, 40]]], np.uint8)
    image_module.fromarray(pixels).save(folder / "x.png")
    images, _ = next(iter(utils.image_dataset_from_directory(
        str(tmp_path / "one"), image_size=(2, 2), verbose=False)))
    np.testing.assert_array_equal(images.numpy()[0], pixels.astype(np.float32))
    images, _ = next(iter(utils.image_dataset_from_directory(
        str(tmp_path / "one"), image_size=(4, 4), verbose=False)))
    np.testing.assert_allclose(images.numpy()[0, :, :, 0], [
        [0, 25, 75, 100], [50, 58.75, 76.25, 85], [150, 126.25, 78.75, 55], [200, 160, 80, 40]])
    images, _ = next(iter(utils.image_dataset_from_directory(
        str(tmp_path / "one"), image_size=(4, 4), interpolation="nearest", verbose=False)))
    np.testing.assert_array_equal(images.numpy()[0, :, :, 0], [
        [0, 0, 100, 100], [0, 0, 100, 100], [200, 200, 40, 40], [200, 200, 40, 40]])
    from tapeflow.data.images import resize_nearest
    three = np.arange(9, dtype=np.float32).reshape(3, 3, 1)   # downsampled: centres 0.75, 2.25
    np.testing.assert_array_equal(resize_nearest(three, 2, 2)[..., 0], [[0, 2], [6, 8]])
    os.mkdir(tmp_path / "c")
    directory = _image_directory(tmp_path / "c", count=5)
    for flag in ("crop_to_aspect_ratio", "pad_to_aspect_ratio"):
        images, _ = next(iter(utils.image_dataset_from_directory(
            directory, batch_size=5, image_size=(18, 12), verbose=False, **{flag: True})))
        assert list(images.shape) == [5, 18, 12, 3]
    with pytest.raises(ValueError, match="`color_mode` must be one of"):
        utils.image_dataset_from_directory(directory, color_mode="cmyk")
    with pytest.raises(ValueError, match="`interpolation` must be one of"):
        utils.image_dataset_from_directory(directory, interpolation="lanczos9")


def test_image_dataset_without_pillow_names_pillow(tmp_path, monkeypatch):
    image_module = pytest.importorskip("PIL.Image")
    os.makedirs(tmp_path / "jpg" / "a")
    image_module.fromarray(np.full((4, 4, 3), 7, np.uint8)).save(tmp_path / "jpg" / "a" / "x.jpg")
    monkeypatch.setitem(sys.modules, "PIL", None)       # as if Pillow were not installed
    with pytest.raises(ImportError, match="needs Pillow"):
        list(utils.image_dataset_from_directory(str(tmp_path / "jpg"), image_size=(4, 4),
                                                verbose=False))
