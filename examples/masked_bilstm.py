"""A bidirectional LSTM over masked, padded sequences, as keras.io's "Bidirectional LSTM on
IMDB" (Embedding -> Bidirectional(LSTM) -> Dense), on a generated task where the two ends of
each sequence decide.

Each sequence is 3-12 digit tokens (ids 1-9), padded with 0 at the END (``padding="post"``),
and its label is 1 when its first token is larger than its last real token.  The forward
LSTM meets the first token at once; the backward one meets the last real token at once --
but only if the padding is masked: ``Embedding(mask_zero=True)`` makes the mask, and
``Bidirectional`` passes it to both directions, so each reads the real tokens alone.  With
the mask, the predictions do not depend on how much padding follows (checked at the end).

    python examples/masked_bilstm.py [--epochs 8]

It prints the test accuracy (chance is about 0.5) and whether the predictions on the test
sequences padded to 12 and to 20 agree.
"""
import argparse

import numpy as np

import tapeflow as tf

layers = tf.keras.layers
MAX_LENGTH = 12


def sequences(n, seed):
    """``n`` token lists (ids 1-9, 3-12 long) and labels: first token > last token."""
    rng = np.random.default_rng(seed)
    tokens = [rng.integers(1, 10, int(rng.integers(3, MAX_LENGTH + 1))) for _ in range(n)]
    keep = [t for t in tokens if t[0] != t[-1]]  # no ties: the label is never arbitrary
    labels = np.array([float(t[0] > t[-1]) for t in keep], np.float32)
    return keep, labels


def padded(tokens, length):
    return tf.keras.utils.pad_sequences(tokens, maxlen=length, padding="post")


def build():
    inputs = tf.keras.Input(shape=(None,), dtype="int32", name="tokens")
    x = layers.Embedding(10, 8, mask_zero=True, name="embedding")(inputs)
    x = layers.Bidirectional(layers.LSTM(12), name="bilstm")(x)
    outputs = layers.Dense(1, activation="sigmoid", name="first_above_last")(x)
    return tf.keras.Model(inputs, outputs, name="masked_bilstm")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=8)
    args = parser.parse_args()

    tf.keras.utils.set_random_seed(0)
    train_tokens, y_train = sequences(600, seed=0)
    test_tokens, y_test = sequences(200, seed=1)
    model = build()
    model.compile(optimizer=tf.keras.optimizers.Adam(0.02), loss="binary_crossentropy",
                  metrics=["accuracy"])
    model.fit(padded(train_tokens, MAX_LENGTH), y_train, batch_size=32, epochs=args.epochs,
              verbose=0)
    x_test = padded(test_tokens, MAX_LENGTH)
    accuracy = model.evaluate(x_test, y_test, verbose=0)[1]
    print(f"test accuracy: {accuracy:.3f} (chance about 0.5)")
    longer = model.predict(padded(test_tokens, 20), verbose=0)
    same = np.allclose(model.predict(x_test, verbose=0), longer, atol=1e-5)
    print(f"predictions with 8 more padding steps equal: {same}")


if __name__ == "__main__":
    main()
