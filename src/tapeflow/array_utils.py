"""Keras's array preprocessing for ``fit``'s inputs: ``pad_sequences``
(``tf.keras.utils.pad_sequences``, also ``tf.keras.preprocessing.sequence.pad_sequences``) makes
lists of different lengths one array; ``to_categorical`` (``tf.keras.utils.to_categorical``)
makes class labels one-hot rows."""
import numbers

import numpy as np

__all__ = ["pad_sequences", "to_categorical"]


def pad_sequences(sequences, maxlen=None, dtype="int32", padding="pre", truncating="pre",
                  value=0.0):
    """Keras's ``pad_sequences``: an array ``(len(sequences), maxlen) + sample_shape``.

    Sequences longer than ``maxlen`` (default: the longest) lose values at the
    start (``truncating="pre"``) or the end ("post"); shorter ones are filled with
    ``value`` before ("pre") or after ("post") their values.  An element of a
    sequence may itself be an array (``sample_shape``, taken from the first
    non-empty sequence); empty sequences are all ``value``.
    """
    if not hasattr(sequences, "__len__"):
        raise ValueError(f"pad_sequences: sequences must be a list of sequences, got "
                         f"{type(sequences).__name__}")
    for name, given in (("padding", padding), ("truncating", truncating)):
        if given not in ("pre", "post"):
            raise ValueError(f"pad_sequences: {name} must be 'pre' or 'post', got {given!r}")
    if maxlen is not None and (isinstance(maxlen, bool) or not isinstance(maxlen, numbers.Integral)
                               or maxlen < 0):
        raise ValueError(f"pad_sequences: maxlen must be a non-negative integer or None, got "
                         f"{maxlen!r}")
    lengths, sample_shape = [], ()
    for i, seq in enumerate(sequences):
        if not hasattr(seq, "__len__"):
            raise ValueError(f"pad_sequences: sequences[{i}] is a {type(seq).__name__}, not a "
                             f"sequence (a list or array of values)")
        lengths.append(len(seq))
        if len(seq) and not sample_shape:
            sample_shape = np.asarray(seq).shape[1:]
    dtype = np.dtype(dtype)
    text = np.issubdtype(dtype, np.str_) or np.issubdtype(dtype, np.object_)
    if isinstance(value, str) and not text:
        raise ValueError(f"pad_sequences: dtype {dtype} cannot hold the string value {value!r}; "
                         f"pass dtype=object (or a string dtype) to pad with strings")
    maxlen = max(lengths, default=0) if maxlen is None else int(maxlen)
    out = np.full((len(sequences), maxlen) + tuple(sample_shape), value, dtype=dtype)
    for i, seq in enumerate(sequences):
        if not len(seq) or not maxlen:
            continue
        kept = np.asarray(seq[-maxlen:] if truncating == "pre" else seq[:maxlen], dtype=dtype)
        if kept.shape[1:] != tuple(sample_shape):
            raise ValueError(f"pad_sequences: sequences[{i}]'s elements have shape "
                             f"{kept.shape[1:]}, unlike the first non-empty sequence's "
                             f"{tuple(sample_shape)}")
        if padding == "post":
            out[i, :len(kept)] = kept
        else:
            out[i, maxlen - len(kept):] = kept
    return out


def to_categorical(x, num_classes=None):
    """Integer class labels as one-hot rows of float32, as ``keras.utils.to_categorical``
    (a trailing axis of size 1 is dropped first)."""
    labels = np.asarray(x.numpy() if hasattr(x, "numpy") else x)
    if labels.dtype.kind not in "biu" and not (
            labels.dtype.kind == "f" and np.array_equal(labels, np.round(labels))):
        raise ValueError(f"to_categorical: labels must be integers, got dtype {labels.dtype}")
    labels = labels.astype(np.int64)
    if labels.ndim > 1 and labels.shape[-1] == 1:
        labels = labels[..., 0]
    if labels.size and labels.min() < 0:
        raise ValueError("to_categorical: labels must be >= 0")
    n = int(labels.max()) + 1 if num_classes is None else int(num_classes)
    if labels.size and labels.max() >= n:
        raise ValueError(f"to_categorical: label {int(labels.max())} is not below "
                         f"num_classes={n}")
    return np.eye(n, dtype=np.float32)[labels]
