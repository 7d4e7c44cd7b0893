"""Building models two ways, Keras's: a Sequential stack and a subclassed Model with call().

    python examples/model_building.py

Both fit scikit-learn's bundled breast-cancer set (569 tumours, 30 features, benign or
malignant; no download) with compile / fit / evaluate / predict, and print summary().
"""
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.model_selection import train_test_split

import tapeflow as tf

data = load_breast_cancer()
x_train, x_test, y_train, y_test = train_test_split(
    data.data.astype(np.float32), data.target.reshape(-1, 1).astype(np.float32),
    test_size=0.25, random_state=42, stratify=data.target)
print(f"breast cancer: {len(x_train)} train / {len(x_test)} test rows, "
      f"{x_train.shape[1]} features, {y_train.mean():.0%} benign")

# --- 1. Sequential: a list of layers, an Input to fix the feature count --------------------------
# Normalization learns each feature's mean and variance from the training set (adapt), so the
# model takes raw features; its statistics are non-trainable weights saved with the model.
tf.random.set_seed(42)
normalize = tf.keras.layers.Normalization()
normalize.adapt(x_train)
sequential = tf.keras.Sequential([
    tf.keras.Input(shape=(30,)),
    normalize,
    tf.keras.layers.Dense(16, activation="relu"),
    tf.keras.layers.Dropout(0.2),                     # active in fit only (training=True)
    tf.keras.layers.Dense(1, activation="sigmoid"),
], name="sequential_classifier")
sequential.summary()


# --- 2. A subclassed Model: layers made in __init__, the forward pass written in call() ----------
class ResidualClassifier(tf.keras.Model):
    """Normalization -> Dense -> (Dense + skip connection) -> logit: a graph a list cannot say."""

    def __init__(self, width=16, **kwargs):
        super().__init__(**kwargs)
        self.normalize = tf.keras.layers.Normalization()   # layers set as attributes are tracked
        self.hidden = tf.keras.layers.Dense(width, activation="relu")
        self.block = tf.keras.layers.Dense(width, activation="relu")
        self.logit = tf.keras.layers.Dense(1)

    def call(self, inputs, training=None):
        h = self.hidden(self.normalize(inputs))
        h = h + self.block(h)                         # the residual connection
        return self.logit(h)                          # a logit: the loss says from_logits=True


subclassed = ResidualClassifier(name="residual_classifier")
subclassed.normalize.adapt(x_train)
subclassed(x_train[:1])                   # the other layers are built on the first call
subclassed.summary()

# --- compile / fit / evaluate / predict, the same calls for both ---------------------------------
sequential.compile(optimizer=tf.keras.optimizers.Adam(1e-2), loss="binary_crossentropy",
                   metrics=["accuracy"])
subclassed.compile(optimizer=tf.keras.optimizers.Adam(1e-2),
                   loss=tf.keras.losses.BinaryCrossentropy(from_logits=True),
                   metrics=[tf.keras.metrics.BinaryAccuracy(threshold=0.0)])   # logit 0 = p 0.5

for model in (sequential, subclassed):
    history = model.fit(x_train, y_train, batch_size=32, epochs=10, validation_split=0.1,
                        verbose=0)
    loss, accuracy = model.evaluate(x_test, y_test, verbose=0)
    print(f"{model.name}: train loss {history.history['loss'][0]:.3f} -> "
          f"{history.history['loss'][-1]:.3f}, test loss {loss:.3f}, test accuracy {accuracy:.3f}")

np.set_printoptions(precision=3, suppress=True)
probabilities = sequential.predict(x_test[:5], verbose=0).ravel()
logits = subclassed.predict(x_test[:5], verbose=0).ravel()
print("P(benign) for five test rows, sequential:", probabilities)
print("                              subclassed:", 1 / (1 + np.exp(-logits)))
print("                             true labels:", y_test[:5].ravel().astype(int))
