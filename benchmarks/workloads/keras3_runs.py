"""W1-W5 in Keras 3 ``fit`` (on whichever backend KERAS_BACKEND names; the benchmark sets jax),
from the same model code as tapeflow's (``keras_models``)."""
import keras
import numpy as np

from . import keras_models


class Keras3Fit:
    """One round is one ``fit(epochs=1, shuffle=False)`` over the round's batches."""

    label = "keras 3 fit"

    def __init__(self, workload, weights, batches):
        self.model = keras_models.build(keras, workload, weights)
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


def runners(workload, weights, batches):
    return [Keras3Fit(workload, weights, batches)]
