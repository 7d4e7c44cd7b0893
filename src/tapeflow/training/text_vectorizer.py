"""Keras's ``TextVectorization`` preprocessing (``output_mode="int"``), on numpy, for the
trainer's ``text_csv`` data source.

A text is standardized (``lower_and_strip_punctuation``, ``lower``, ``strip_punctuation`` or
None), split on whitespace and looked up in a vocabulary: index 0 is padding (``""``), 1 the
out-of-vocabulary token (``"[UNK]"``), then the tokens ``adapt`` counted, most frequent
first, ties in reverse string order (Keras's ``np.lexsort((tokens, counts))[::-1]``), at
most ``max_tokens`` entries in all.  ``output_sequence_length`` pads with 0 at the end or
cuts at the end; without it a batch is padded to its longest text.
"""
import collections
import re

import numpy as np

__all__ = ["TextVectorizer", "STANDARDIZE"]

PAD, OOV = "", "[UNK]"
# Keras's DEFAULT_STRIP_REGEX (",-\." is the range from "," to ".", which holds "-")
_PUNCTUATION = re.compile(r'[!"#$%&()\*\+,-\./:;<=>?@\[\\\]^_`{|}~\']')
STANDARDIZE = ("lower_and_strip_punctuation", "lower", "strip_punctuation", None)


class TextVectorizer:
    """Texts to rows of token ids, as ``TextVectorization(output_mode="int")`` makes them."""

    def __init__(self, max_tokens=None, output_sequence_length=None,
                 standardize="lower_and_strip_punctuation", vocabulary=None):
        if standardize not in STANDARDIZE:
            raise ValueError(f"standardize must be one of {STANDARDIZE}, got {standardize!r}")
        if max_tokens is not None and max_tokens < 3:
            raise ValueError(f"max_tokens must be at least 3 (padding, [UNK] and one token), "
                             f"got {max_tokens}")
        self.max_tokens = max_tokens
        self.output_sequence_length = output_sequence_length
        self.standardize = standardize
        self._index = {}
        if vocabulary is not None:
            self.set_vocabulary(vocabulary)

    def tokens(self, text):
        """``text`` standardized and split on whitespace."""
        if self.standardize in ("lower", "lower_and_strip_punctuation"):
            text = text.lower()
        if self.standardize in ("strip_punctuation", "lower_and_strip_punctuation"):
            text = _PUNCTUATION.sub("", text)
        return text.split()

    def adapt(self, texts):
        """The vocabulary of ``texts``: the most frequent tokens, ``max_tokens`` - 2 of them."""
        counts = collections.Counter(t for text in texts for t in self.tokens(text))
        ordered = [token for token, _ in sorted(counts.items(), key=lambda kv: (kv[1], kv[0]),
                                                reverse=True)]
        self.set_vocabulary(ordered if self.max_tokens is None
                            else ordered[:self.max_tokens - 2])

    def set_vocabulary(self, vocabulary):
        vocabulary = [t for t in vocabulary if t not in (PAD, OOV)]
        self._index = {token: i + 2 for i, token in enumerate(vocabulary)}

    def get_vocabulary(self):
        return [PAD, OOV] + list(self._index)

    def vocabulary_size(self):
        return len(self._index) + 2

    def __call__(self, texts):
        rows = [[self._index.get(t, 1) for t in self.tokens(text)] for text in texts]
        length = self.output_sequence_length
        if length is None:
            length = max((len(r) for r in rows), default=0)
        out = np.zeros((len(rows), length), np.int32)
        for i, row in enumerate(rows):
            row = row[:length]
            out[i, :len(row)] = row
        return out
