"""W1-W5 as Keras models: the same code builds them in tapeflow (``tapeflow.keras``) and in
Keras 3 (``keras``), so the two run one definition."""
import numpy as np

from .spec import (BETA_1, BETA_2, EPSILON, FFN_DIM, LAYER_NORM_EPSILON, LEARNING_RATE,
                   LSTM_UNITS, MHA_HEADS, MHA_KEY_DIM, MODEL_DIM, VOCAB, EMBED)


def _layers_of(keras, workload):
    L = keras.layers
    if workload.name == "W1":
        return [L.Dense(512, activation="relu"), L.Dense(512, activation="relu"), L.Dense(10)]
    if workload.name == "W2":
        return [L.Conv2D(32, 3, activation="relu"), L.MaxPooling2D(2),
                L.Conv2D(64, 3, activation="relu"), L.MaxPooling2D(2), L.Flatten(),
                L.Dense(128, activation="relu"), L.Dense(10)]
    if workload.name == "W3":
        return [L.Embedding(VOCAB, EMBED), L.LSTM(LSTM_UNITS), L.Dense(2)]
    return [L.Dense(64, activation="relu"), L.Dense(64, activation="relu"), L.Dense(1)]


def _transformer_block(keras, workload):
    """Post-LayerNorm encoder block, then mean over the sequence and Dense(2)."""
    L = keras.layers
    x = keras.Input(workload.input_shape)
    attention = L.MultiHeadAttention(MHA_HEADS, MHA_KEY_DIM)(x, x)
    h = L.LayerNormalization(epsilon=LAYER_NORM_EPSILON)(L.Add()([x, attention]))
    ffn = L.Dense(MODEL_DIM)(L.Dense(FFN_DIM, activation="relu")(h))
    h = L.LayerNormalization(epsilon=LAYER_NORM_EPSILON)(L.Add()([h, ffn]))
    return keras.Model(x, L.Dense(2)(L.GlobalAveragePooling1D()(h)))


def build(keras, workload, weights):
    """The workload's model with ``weights`` set, compiled with Adam and its loss."""
    if workload.name == "W4":
        model = _transformer_block(keras, workload)
    else:
        model = keras.Sequential([keras.Input(workload.input_shape)]
                                 + _layers_of(keras, workload))
    model.set_weights(weights)
    model.compile(optimizer=optimizer(keras), loss=loss(keras, workload))
    return model


def optimizer(keras):
    return keras.optimizers.Adam(LEARNING_RATE, beta_1=BETA_1, beta_2=BETA_2, epsilon=EPSILON)


def loss(keras, workload):
    if workload.loss == "mse":
        return keras.losses.MeanSquaredError()
    return keras.losses.SparseCategoricalCrossentropy(from_logits=True)


class FitRun:
    """``model.fit`` as a user runs it: one round is one ``fit(epochs=1, shuffle=False)`` over
    the round's batches; the first step is a ``fit`` on the first batch alone."""

    def __init__(self, keras, label, workload, weights, batches):
        self.label = label
        self.model = build(keras, workload, weights)
        self.batch = workload.batch
        self.first = batches[0]
        self.x = np.concatenate([x for x, _ in batches])
        self.y = np.concatenate([y for _, y in batches])

    def first_step(self):
        history = self.model.fit(*self.first, batch_size=self.batch, epochs=1, shuffle=False,
                                 verbose=0)
        return float(history.history["loss"][0]), self.model.get_weights()

    def run_round(self):
        self.model.fit(self.x, self.y, batch_size=self.batch, epochs=1, shuffle=False, verbose=0)
