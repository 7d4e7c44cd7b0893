"""W1-W5 in Keras 3 ``fit`` (on whichever backend KERAS_BACKEND names; the benchmark sets jax),
from the same model code as tapeflow's (``keras_models``)."""
import keras

from .keras_models import FitRun


def runners(workload, weights, batches):
    return [FitRun(keras, "keras 3 fit", workload, weights, batches)]
