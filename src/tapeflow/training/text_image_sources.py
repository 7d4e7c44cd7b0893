"""The trainer's data sources for sequences and images, from local files.

- ``text_csv``: a CSV file of texts and labels.  The texts become rows of token ids as
  Keras's ``TextVectorization(max_tokens, output_sequence_length)`` makes them, its
  vocabulary adapted on the training split alone (the test texts' words are unknown to it,
  as they would be to a deployed model).  Labels are class ids (integers from 0) or class
  names, numbered in sorted order as ``image_dataset_from_directory`` numbers its folders.
  The vocabulary is written in the run directory (``vocabulary.txt``), so that ``tapeflow
  predict`` takes raw texts.
- ``image_directory``: a folder holding one folder of images per class, read as
  ``tf.keras.utils.image_dataset_from_directory`` reads it (classes in sorted order, images
  resized to ``image_size``, float32 values 0-255, (height, width, channels)).

Both split their rows as every source does (``split``: the same ``train_test_split`` calls on
the row numbers) and give a ``Dataset`` whose ``n_classes`` is the number of classes.
(named_sources.py's ``AnyDataConfig`` is the ``data:`` section with every source.)
"""
import dataclasses
import os
import pathlib
from typing import Annotated, Literal, Optional

import numpy as np
from pydantic import Field

from .data_sources import Dataset, DataSource, _check_sizes, _fingerprint, read_csv_rows
from .errors import DataError
from .text_vectorizer import TextVectorizer

__all__ = ["TextCsvData", "ImageDirectoryData", "VOCABULARY_NAME", "vocabulary_text"]


class TextCsvData(DataSource):
    source: Literal["text_csv"]
    path: str = Field(min_length=1)
    text: str = Field("text", min_length=1, description="the column of texts")
    label: str = Field("label", min_length=1, description="the column of class ids or names")
    max_tokens: int = Field(10000, ge=3, le=10 ** 7, description="the vocabulary's size, "
                            "padding (0) and [UNK] (1) included")
    sequence_length: int = Field(ge=1, le=10 ** 5, description="token ids per text: padded "
                                 "with 0 at the end, or cut")
    standardize: Optional[Literal["lower_and_strip_punctuation", "lower",
                                  "strip_punctuation"]] = "lower_and_strip_punctuation"
    delimiter: str = Field(",", min_length=1, max_length=1)

    def load(self, base_dir):
        name = self.path
        header, rows, _ = read_csv_rows(_existing(base_dir, self.path, "file"), name,
                                        self.delimiter)
        columns = {}
        for key in ("text", "label"):
            column = getattr(self, key)
            if column not in header:
                raise DataError(f"{name}: data.{key} names column {column!r}, which is not in "
                                f"the header ({', '.join(header)})")
            columns[key] = [row[header.index(column)] for row in rows]
        labels, class_names = _class_ids(columns["label"], name, self.label)
        parts = _split_rows(name, len(rows), self.split)
        texts = np.asarray(columns["text"], dtype=object)
        vectorizer = TextVectorizer(self.max_tokens, self.sequence_length, self.standardize)
        vectorizer.adapt(texts[parts[0]])
        x = vectorizer(texts)
        dataset = _dataset(x, labels.astype(self.dtype), parts, [self.text], [self.label],
                           len(class_names))
        return dataclasses.replace(dataset, vocabulary=tuple(vectorizer.get_vocabulary()))

    def vectorizer(self, run_dir):
        """The run's ``TextVectorizer``, its vocabulary read from ``run_dir``: raw texts to the
        token ids the model was trained on."""
        path = os.path.join(run_dir, VOCABULARY_NAME)
        try:
            with open(path, encoding="utf-8") as f:
                vocabulary = f.read().splitlines()
        except OSError as e:
            raise DataError(f"{path}: cannot read the run's vocabulary ({e}); a text run "
                            f"writes it when it starts") from None
        return TextVectorizer(self.max_tokens, self.sequence_length, self.standardize,
                              vocabulary)


class ImageDirectoryData(DataSource):
    source: Literal["image_directory"]
    path: str = Field(min_length=1, description="a folder holding a folder of images per class")
    image_size: Annotated[list[Annotated[int, Field(ge=1, le=4096)]],
                          Field(min_length=2, max_length=2)] = [256, 256]  # height, width
    color_mode: Literal["rgb", "grayscale", "rgba"] = "rgb"
    interpolation: Literal["bilinear", "nearest"] = "bilinear"
    crop_to_aspect_ratio: bool = False

    def load(self, base_dir):
        from ..data.directory import IMAGE_FORMATS, index_directory
        from ..data.images import CHANNELS, load_image

        name = self.path
        directory = _existing(base_dir, self.path, "folder")
        paths, labels, class_names = index_directory(str(directory), "inferred", IMAGE_FORMATS,
                                                     shuffle=False, verbose=False)
        if len(class_names) < 2 or not paths:
            raise DataError(f"{name}: found {len(paths)} images in {len(class_names)} class "
                            f"folders; an image classifier needs a folder of images (formats "
                            f"{', '.join(IMAGE_FORMATS)}) for each of at least 2 classes")
        images = []
        for path in paths:
            try:
                images.append(load_image(path, tuple(self.image_size), CHANNELS[self.color_mode],
                                         self.interpolation, self.crop_to_aspect_ratio))
            except (OSError, ValueError, ImportError) as e:
                raise DataError(f"{name}: cannot read {os.path.relpath(path, directory)} as an "
                                f"image ({e})") from None
        x = np.stack(images).astype(self.dtype)
        y = np.asarray(labels, self.dtype).reshape(-1, 1)
        return _dataset(x, y, _split_rows(name, len(x), self.split), ["pixels"], ["class"],
                        len(class_names))


# the text source's vocabulary in a run directory: a token a line, from id 1 ("[UNK]"), as
# Keras's TextVectorization(vocabulary=FILE) reads one
VOCABULARY_NAME = "vocabulary.txt"


def vocabulary_text(dataset):
    """What ``VOCABULARY_NAME`` holds for ``dataset``, or None (no text source)."""
    if dataset.vocabulary is None:
        return None
    return "".join(token + "\n" for token in dataset.vocabulary[1:])  # id 0 is padding ("")


def _existing(base_dir, path, kind):
    full = pathlib.Path(base_dir, pathlib.Path(path).expanduser())
    if not (full.is_file() if kind == "file" else full.is_dir()):
        where = "" if str(full) == path else f" (looked for {full})"
        raise DataError(f"{path}: no such {kind}{where}")
    return full


def _class_ids(cells, name, column):
    """The labels as a column of class ids, and the class names: integers from 0 are ids,
    anything else names classes numbered in sorted order."""
    cells = [c.strip() for c in cells]
    if all(c.isdigit() for c in cells):
        ids = np.asarray([int(c) for c in cells])
        return ids.reshape(-1, 1), [str(i) for i in range(int(ids.max()) + 1)]
    if any(not c for c in cells):
        raise DataError(f"{name}: column {column!r} has an empty label (row "
                        f"{cells.index('') + 2})")
    class_names = sorted(set(cells))
    number = {c: i for i, c in enumerate(class_names)}
    return np.asarray([number[c] for c in cells]).reshape(-1, 1), class_names


def _split_rows(name, rows, split):
    """(train, valid or None, test) row numbers: the parts ``data.load_data``'s two
    ``train_test_split`` calls make of arrays of ``rows`` rows."""
    from sklearn.model_selection import train_test_split  # imported only to load data

    _check_sizes(name, rows, split)
    train, test = train_test_split(np.arange(rows), test_size=split.test_size,
                                   random_state=split.seed)
    valid = None
    if split.valid_size > 0:
        train, valid = train_test_split(train, test_size=split.valid_size,
                                        random_state=split.seed)
    return train, valid, test


def _dataset(x, y, parts, features, targets, n_classes):
    train, valid, test = parts
    arrays = [x[train], y[train], None if valid is None else x[valid],
              None if valid is None else y[valid], x[test], y[test]]
    for a in arrays:
        if a is not None:
            a.flags.writeable = False
    return Dataset(*arrays, tuple(features), tuple(targets),
                   _fingerprint(arrays, features, targets), n_classes)
