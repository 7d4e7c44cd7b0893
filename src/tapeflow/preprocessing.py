"""``pad_sequences`` (``tf.keras.utils.pad_sequences``, also
``tf.keras.preprocessing.sequence.pad_sequences``): lists of different lengths as one array."""
import numbers

import numpy as np

__all__ = ["pad_sequences"]


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
