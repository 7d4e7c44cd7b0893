"""A variational autoencoder whose KL term is an ``add_loss``, as keras.io's VAE, on sklearn's
8x8 digits.

The encoder maps the 64 pixels (scaled to 0..1) to the mean and log-variance of a 4-number
code; the ``Sampling`` layer draws a code with the reparameterization trick and, in its
``call``, adds the KL divergence from the unit normal with ``self.add_loss`` -- so
``fit`` trains on the compiled reconstruction loss plus the KL term (both in the logged
``loss``), in its traced step.  The model is compiled with a loss on the pixels only;
``model.losses`` holds the KL term of the last call.

    python examples/vae_add_loss.py [--epochs 40]

It prints the test reconstruction error next to the error of always predicting the mean
training image, and the test KL term.
"""
import argparse

import numpy as np
from sklearn.datasets import load_digits
from sklearn.model_selection import train_test_split

import tapeflow as tf

layers = tf.keras.layers
LATENT = 4


class Sampling(layers.Layer):
    """z = mean + exp(log_var / 2) * eps from (mean, log_var); adds the KL divergence of
    N(mean, exp(log_var)) from N(0, 1), summed over the code and averaged over the batch."""

    def __init__(self, kl_weight=1.0, **kwargs):
        super().__init__(**kwargs)
        self.kl_weight = float(kl_weight)

    def call(self, inputs):
        mean, log_var = inputs
        kl = -0.5 * tf.reduce_mean(tf.reduce_sum(
            1.0 + log_var - tf.square(mean) - tf.exp(log_var), axis=1))
        self.add_loss(self.kl_weight * kl)
        return mean + tf.exp(0.5 * log_var) * tf.random.normal(tf.shape(mean))

    def get_config(self):
        return {**super().get_config(), "kl_weight": self.kl_weight}


def build(kl_weight):
    pixels = tf.keras.Input(shape=(64,), name="pixels")
    hidden = layers.Dense(32, activation="relu", name="encoder")(pixels)
    mean = layers.Dense(LATENT, name="z_mean")(hidden)
    log_var = layers.Dense(LATENT, name="z_log_var")(hidden)
    code = Sampling(kl_weight, name="sampling")([mean, log_var])
    hidden = layers.Dense(32, activation="relu", name="decoder")(code)
    reconstruction = layers.Dense(64, activation="sigmoid", name="reconstruction")(hidden)
    return tf.keras.Model(pixels, reconstruction, name="vae")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=40)
    args = parser.parse_args()

    tf.keras.utils.set_random_seed(0)
    x, _ = load_digits(return_X_y=True)
    x_train, x_test = train_test_split((x / 16.0).astype(np.float32), test_size=0.25,
                                       random_state=0)
    # the reconstruction loss is a mean over the 64 pixels: the KL term is weighted 1/64 so
    # that the two are in the proportion of keras.io's VAE (a sum over the pixels plus KL)
    model = build(kl_weight=1.0 / 64)
    model.compile(optimizer=tf.keras.optimizers.Adam(0.005), loss="binary_crossentropy")
    history = model.fit(x_train, x_train, batch_size=64, epochs=args.epochs, verbose=0)
    print(f"after {args.epochs} epochs: loss {history.history['loss'][-1]:.4f} "
          f"(reconstruction + KL)")

    model(x_test)  # one call: model.losses is its KL term
    kl = float(model.losses[0].numpy()) * 64
    reconstruction = model.predict(x_test, verbose=0)
    mse = float(np.mean((reconstruction - x_test) ** 2))
    baseline = float(np.mean((x_train.mean(0) - x_test) ** 2))
    print(f"test reconstruction MSE: {mse:.4f} (mean image: {baseline:.4f}); "
          f"test KL: {kl:.3f} nats")


if __name__ == "__main__":
    main()
