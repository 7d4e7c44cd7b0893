"""A text classifier with Embedding + LSTM on a generated corpus where word order decides.

Each "sentence" is 4-14 token ids: filler words with one "alpha" (id 1) and one "beta"
(id 2) somewhere among them; the label is 1 when alpha comes before beta.  Both words occur in
every sentence, so a bag of words is at chance (50%): only a model that reads the order can
do better.  Sentences are padded with 0 at the front (``pad_sequences``' default) and
``Embedding(mask_zero=True)`` masks the padding, so the LSTM reads the words alone.

    python examples/text_classifier.py [--epochs 5] [--gru]
"""
import argparse
import time

import numpy as np

import tapeflow as tf

VOCABULARY = 20  # 0 is padding, 1 "alpha", 2 "beta", 3.. filler words
MAX_LENGTH = 14


def corpus(n, seed):
    """``n`` sentences (lists of ids) and their labels: 1 when alpha (1) precedes beta (2)."""
    rng = np.random.default_rng(seed)
    sentences, labels = [], []
    for _ in range(n):
        length = int(rng.integers(4, MAX_LENGTH + 1))
        words = rng.integers(3, VOCABULARY, length)
        a, b = rng.choice(length, 2, replace=False)
        words[a], words[b] = 1, 2
        sentences.append(words.tolist())
        labels.append(int(a < b))
    return sentences, np.array(labels)


def build(recurrent):
    return tf.keras.Sequential([
        tf.keras.Input(shape=(MAX_LENGTH,), dtype="int32"),
        tf.keras.layers.Embedding(VOCABULARY, 8, mask_zero=True),
        recurrent(16),
        tf.keras.layers.Dense(2),
    ])


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=5)
    parser.add_argument("--gru", action="store_true", help="a GRU instead of the LSTM")
    args = parser.parse_args()

    tf.keras.utils.set_random_seed(0)
    train_sentences, y_train = corpus(2000, seed=1)
    test_sentences, y_test = corpus(500, seed=2)
    pad = tf.keras.utils.pad_sequences  # zeros in front, as Keras's
    x_train, x_test = pad(train_sentences, MAX_LENGTH), pad(test_sentences, MAX_LENGTH)
    print(f"{len(x_train)} training sentences, e.g. {train_sentences[0]} -> label {y_train[0]}")
    print(f"padded: {x_train[0].tolist()}")

    model = build(tf.keras.layers.GRU if args.gru else tf.keras.layers.LSTM)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.01),
                  loss=tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                  metrics=["accuracy"])
    model.summary()
    start = time.perf_counter()
    model.fit(x_train, y_train, epochs=args.epochs, batch_size=64, verbose=2)
    seconds = time.perf_counter() - start
    _, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"trained {args.epochs} epochs in {seconds:.1f} s")
    print(f"test accuracy: {accuracy:.3f} (chance: 0.5; a bag of words cannot beat it)")


if __name__ == "__main__":
    main()
