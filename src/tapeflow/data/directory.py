"""``keras.utils.text_dataset_from_directory`` and ``image_dataset_from_directory``: a local
folder as a dataset, with Keras 3's rules: labels inferred from the sorted subdirectory names
(or given, or none), files in sorted walk order shuffled once by ``seed``, a
``validation_split`` taken off the end, labels as int / categorical / binary, and the
returned dataset's ``class_names`` (and ``file_paths``)."""
import os

import numpy as np

from ..core.context import context
from ..dtypes import string
from ..tracing.function import TensorSpec
from .dataset import Dataset
from .images import CHANNELS, RESIZERS, load_image

__all__ = ["text_dataset_from_directory", "image_dataset_from_directory"]

IMAGE_FORMATS = (".bmp", ".gif", ".jpeg", ".jpg", ".png")


def _check_arguments(labels, label_mode, class_names, validation_split, subset, shuffle, seed,
                     what):
    if labels not in ("inferred", None):
        if not isinstance(labels, (list, tuple)):
            raise ValueError(f"`labels` argument should be a list/tuple of integer labels, of "
                             f"the same size as the number of {what} files in the target "
                             f"directory. If you wish to infer the labels from the "
                             f"subdirectory names in the target directory, pass "
                             f"`labels=\"inferred\"`. If you wish to get a dataset that only "
                             f"contains {what} samples (no labels), pass `labels=None`.")
        if class_names:
            raise ValueError(f"You can only pass `class_names` if `labels=\"inferred\"`. "
                             f"Received: labels={labels}, and class_names={class_names}")
    if label_mode not in {"int", "categorical", "binary", None}:
        raise ValueError(f"`label_mode` argument must be one of \"int\", \"categorical\", "
                         f"\"binary\", or None. Received: label_mode={label_mode}")
    if validation_split and not 0 < validation_split < 1:
        raise ValueError(f"`validation_split` must be between 0 and 1, received: "
                         f"{validation_split}")
    if (validation_split or subset) and not (validation_split and subset):
        raise ValueError("If `subset` is set, `validation_split` must be set, and inversely.")
    if subset not in ("training", "validation", "both", None):
        raise ValueError(f"`subset` must be either \"training\", \"validation\" or \"both\", "
                         f"received: {subset}")
    if validation_split and shuffle and seed is None:
        raise ValueError("If using `validation_split` and shuffling the data, you must provide "
                         "a `seed` argument, to make sure that there is no overlap between the "
                         "training and validation subset.")


def _files_under(directory, formats, follow_links):
    """The files under ``directory`` with an allowed extension, in sorted walk order."""
    found = []
    for root, _, files in sorted(os.walk(directory, followlinks=follow_links),
                                 key=lambda entry: entry[0]):
        found += [os.path.join(root, name) for name in sorted(files)
                  if name.lower().endswith(formats)]
    return found


def index_directory(directory, labels, formats, class_names=None, shuffle=True, seed=None,
                    follow_links=False, verbose=True):
    """``(file_paths, labels, class_names)`` as Keras's ``dataset_utils.index_directory``."""
    if not os.path.isdir(directory):
        raise ValueError(f"Directory {directory!r} does not exist or is not a directory")
    if labels == "inferred":
        subdirs = [d for d in sorted(os.listdir(directory))
                   if os.path.isdir(os.path.join(directory, d)) and not d.startswith(".")]
        if class_names is not None:
            if not set(class_names).issubset(subdirs):
                raise ValueError(f"The `class_names` passed did not match the names of the "
                                 f"subdirectories of the target directory. Expected: {subdirs} "
                                 f"(or a subset of it), but received: class_names={class_names}")
            subdirs = list(class_names)
        paths, found_labels = [], []
        for index, subdir in enumerate(subdirs):
            files = _files_under(os.path.join(directory, subdir), formats, follow_links)
            paths += files
            found_labels += [index] * len(files)
        labels, class_names = np.asarray(found_labels, np.int32), subdirs
    else:
        paths = _files_under(directory, formats, follow_links)
        if labels is not None:
            if len(labels) != len(paths):
                raise ValueError(f"Expected the lengths of `labels` to match the number of "
                                 f"files in the target directory. len(labels) is {len(labels)} "
                                 f"while we found {len(paths)} files in directory {directory}.")
            class_names = [str(label) for label in sorted(set(labels))]
            labels = np.asarray(labels, np.int32)
    if verbose:
        print(f"Found {len(paths)} files" + ("." if labels is None else
                                             f" belonging to {len(class_names)} classes."))
    if shuffle:
        order = np.arange(len(paths))
        np.random.RandomState(seed).shuffle(order)
        paths = [paths[i] for i in order]
        labels = None if labels is None else labels[order]
    return paths, labels, class_names


def _split(paths, labels, validation_split, subset, verbose):
    if not validation_split:
        return paths, labels
    num_val = int(validation_split * len(paths))
    if subset == "training":
        part, message = slice(0, len(paths) - num_val), f"{len(paths) - num_val} files for training"
    else:
        part, message = slice(len(paths) - num_val, len(paths)), f"{num_val} files for validation"
    if verbose:
        print(f"Using {message}.")
    return paths[part], None if labels is None else labels[part]


def _encoded(label, label_mode, num_classes):
    if label_mode == "binary":
        return np.asarray([label], np.float32)
    if label_mode == "categorical":
        return np.eye(num_classes, dtype=np.float32)[label]
    return np.asarray(label, np.int32)


def _label_spec(label_mode, num_classes):
    return {"binary": TensorSpec((1,), np.float32), "int": TensorSpec((), np.int32),
            "categorical": TensorSpec((num_classes,), np.float32)}[label_mode]


def _datasets(paths, labels, label_mode, class_names, load, sample_spec, batch_size, shuffle,
              seed, validation_split, subset, verbose, nothing_found):
    """The dataset (or, for ``subset="both"``, training and validation datasets) of
    ``load(path)`` and encoded labels, batched and shuffled as Keras does."""
    parts = ["training", "validation"] if subset == "both" else [subset]
    made = []
    for part in parts:
        part_paths, part_labels = _split(paths, labels, validation_split, part, verbose)
        if not part_paths:
            raise ValueError(nothing_found)
        num_classes = len(class_names) if class_names else 0

        def make(part_paths=part_paths, part_labels=part_labels):
            for i, path in enumerate(part_paths):
                sample = load(path)
                yield sample if label_mode is None else (
                    sample, _encoded(part_labels[i], label_mode, num_classes))
        spec = sample_spec if label_mode is None else (sample_spec,
                                                       _label_spec(label_mode, num_classes))
        dataset = Dataset(make, spec, len(part_paths))
        training = subset != "both" or part == "training"   # Keras's: "both" keeps val. in order
        if batch_size is not None:
            if shuffle and training:
                dataset = dataset.shuffle(buffer_size=batch_size * 8, seed=seed)
            dataset = dataset.batch(batch_size)
        elif shuffle and training:
            dataset = dataset.shuffle(buffer_size=1024, seed=seed)
        dataset.class_names = class_names
        dataset.file_paths = part_paths
        made.append(dataset)
    return made if subset == "both" else made[0]


def _prepared(directory, labels, label_mode, class_names, shuffle, seed, validation_split,
              subset, follow_links, verbose, formats, what):
    _check_arguments(labels, label_mode, class_names, validation_split, subset, shuffle, seed,
                     what)
    if labels is None or label_mode is None:
        labels = label_mode = None
    if seed is None:
        seed = int(context().random.rng.integers(10 ** 6))
    paths, labels, class_names = index_directory(
        directory, labels, formats, class_names=class_names, shuffle=shuffle, seed=seed,
        follow_links=follow_links, verbose=verbose)
    if label_mode == "binary" and len(class_names) != 2:
        raise ValueError(f"When passing `label_mode=\"binary\"`, there must be exactly 2 "
                         f"class_names. Received: class_names={class_names}")
    return paths, labels, label_mode, class_names, seed


def text_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                class_names=None, batch_size=32, max_length=None, shuffle=True,
                                seed=None, validation_split=None, subset=None,
                                follow_links=False, verbose=True):
    """The ``.txt`` files under ``directory`` as a dataset of strings (and labels); each text
    cut to ``max_length`` characters where given."""
    paths, labels, label_mode, class_names, seed = _prepared(
        directory, labels, label_mode, class_names, shuffle, seed, validation_split, subset,
        follow_links, verbose, (".txt",), "text")

    def load(path):
        with open(path, encoding="utf-8", errors="replace") as f:
            text = f.read()
        return np.asarray(text if max_length is None else text[:max_length])
    return _datasets(paths, labels, label_mode, class_names, load, TensorSpec((), string),
                     batch_size, shuffle, seed, validation_split, subset, verbose,
                     f"No text files found in directory {directory}. Allowed format: .txt")


def image_dataset_from_directory(directory, labels="inferred", label_mode="int",
                                 class_names=None, color_mode="rgb", batch_size=32,
                                 image_size=(256, 256), shuffle=True, seed=None,
                                 validation_split=None, subset=None, interpolation="bilinear",
                                 follow_links=False, crop_to_aspect_ratio=False,
                                 pad_to_aspect_ratio=False, data_format=None, verbose=True):
    """The images under ``directory`` as a dataset of float32 (height, width, channels)
    arrays, values 0-255, resized to ``image_size`` (and labels)."""
    if color_mode not in CHANNELS:
        raise ValueError(f"`color_mode` must be one of {{\"rgb\", \"rgba\", \"grayscale\"}}. "
                         f"Received: color_mode={color_mode}")
    if interpolation not in RESIZERS:
        raise ValueError(f"`interpolation` must be one of {sorted(RESIZERS)} here, got "
                         f"{interpolation!r}")
    if crop_to_aspect_ratio and pad_to_aspect_ratio:
        raise ValueError("Only one of `crop_to_aspect_ratio` or `pad_to_aspect_ratio` can be "
                         "set to `True`.")
    if data_format not in (None, "channels_last", "channels_first"):
        raise ValueError(f"`data_format` must be 'channels_last' or 'channels_first', got "
                         f"{data_format!r}")
    height, width = (int(d) for d in image_size)
    channels = CHANNELS[color_mode]
    paths, labels, label_mode, class_names, seed = _prepared(
        directory, labels, label_mode, class_names, shuffle, seed, validation_split, subset,
        follow_links, verbose, IMAGE_FORMATS, "image")
    channels_first = data_format == "channels_first"

    def load(path):
        image = load_image(path, (height, width), channels, interpolation,
                           crop_to_aspect_ratio, pad_to_aspect_ratio)
        return np.transpose(image, (2, 0, 1)) if channels_first else image
    shape = (channels, height, width) if channels_first else (height, width, channels)
    return _datasets(paths, labels, label_mode, class_names, load,
                     TensorSpec(shape, np.float32), batch_size, shuffle, seed,
                     validation_split, subset, verbose,
                     f"No images found in directory {directory}. Allowed formats: "
                     f"{IMAGE_FORMATS}")
