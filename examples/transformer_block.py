"""A Transformer block text classifier, as keras.io's "Text classification with Transformer":
a ``TokenAndPositionEmbedding`` layer (token embedding plus a learned embedding of each
position), a ``TransformerBlock`` layer (MultiHeadAttention, a feed-forward network, residual
connections, LayerNormalization, Dropout), average pooling and a softmax head.

The data are generated so that order decides: each sequence of 10 tokens has filler words
(ids 3-11) and one "alpha" (id 1) and one "beta" (id 2); the label is 1 when alpha comes
first.  Every sequence holds the same words up to order, so a bag of words is at chance --
and so is self-attention without the position embedding (it does not see order): the
position embedding is what lets the block learn the task.

    python examples/transformer_block.py [--epochs 10]

It prints the test accuracy (chance is 0.5).
"""
import argparse

import numpy as np

import tapeflow as tf

layers = tf.keras.layers
VOCABULARY, LENGTH = 12, 10


class TokenAndPositionEmbedding(layers.Layer):
    """keras.io's: the embedding of each token plus the embedding of its position."""

    def __init__(self, maxlen, vocab_size, embed_dim, **kwargs):
        super().__init__(**kwargs)
        self.maxlen, self.vocab_size, self.embed_dim = maxlen, vocab_size, embed_dim
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        positions = self.pos_emb(tf.range(start=0, limit=tf.shape(x)[-1], delta=1))
        return self.token_emb(x) + positions

    def get_config(self):
        return {**super().get_config(), "maxlen": self.maxlen, "vocab_size": self.vocab_size,
                "embed_dim": self.embed_dim}


class TransformerBlock(layers.Layer):
    """keras.io's: self-attention and a feed-forward network, each with a residual
    connection, dropout and layer normalization."""

    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1, **kwargs):
        super().__init__(**kwargs)
        self.embed_dim, self.num_heads, self.ff_dim, self.rate = embed_dim, num_heads, ff_dim, rate
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = tf.keras.Sequential([layers.Dense(ff_dim, activation="relu"),
                                        layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs, training=None):
        attn_output = self.att(inputs, inputs)
        attn_output = self.dropout1(attn_output, training=training)
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.ffn(out1)
        ffn_output = self.dropout2(ffn_output, training=training)
        return self.layernorm2(out1 + ffn_output)

    def get_config(self):
        return {**super().get_config(), "embed_dim": self.embed_dim,
                "num_heads": self.num_heads, "ff_dim": self.ff_dim, "rate": self.rate}


def sequences(n, seed):
    """``n`` sequences of LENGTH ids with one alpha (1) and one beta (2); label: alpha first."""
    rng = np.random.default_rng(seed)
    x = rng.integers(3, VOCABULARY, (n, LENGTH)).astype(np.int32)
    y = np.zeros(n, np.int32)
    for row, label in zip(x, range(n)):
        a, b = rng.choice(LENGTH, 2, replace=False)
        row[a], row[b] = 1, 2
        y[label] = int(a < b)
    return x, y


def build(embed_dim=16, num_heads=2, ff_dim=32):
    inputs = tf.keras.Input(shape=(LENGTH,), dtype="int32")
    x = TokenAndPositionEmbedding(LENGTH, VOCABULARY, embed_dim)(inputs)
    x = TransformerBlock(embed_dim, num_heads, ff_dim)(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(16, activation="relu")(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    return tf.keras.Model(inputs=inputs, outputs=outputs, name="transformer_classifier")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=10)
    args = parser.parse_args()

    tf.keras.utils.set_random_seed(0)
    x_train, y_train = sequences(1000, seed=0)
    x_test, y_test = sequences(300, seed=1)
    model = build()
    model.compile(optimizer=tf.keras.optimizers.Adam(0.003),
                  loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x_train, y_train, batch_size=32, epochs=args.epochs, verbose=0)
    accuracy = model.evaluate(x_test, y_test, verbose=0)[1]
    print(f"test accuracy: {accuracy:.3f} (chance 0.5)")


if __name__ == "__main__":
    main()
