"""W1-W5 in tapeflow: ``model.fit`` (its compiled train step, as a user runs it) and the bare
traced step (``@tf.function``: forward, ``tape.gradient``, ``apply_gradients``)."""
import tapeflow as tf

from . import keras_models


class TapeflowFit(keras_models.FitRun):
    def __init__(self, workload, weights, batches):
        super().__init__(tf.keras, "tapeflow fit", workload, weights, batches)

    def equations(self):
        concretes = list(self.model.train_function._cache.values())
        return len(concretes[-1].optimized_graph.eqns) if concretes else None


class TapeflowTraced:
    """The bare traced step on tf.constant batches, converted beforehand."""

    label = "tapeflow traced"

    def __init__(self, workload, weights, batches):
        self.model = model = keras_models.build(tf.keras, workload, weights)
        optimizer = keras_models.optimizer(tf.keras)
        loss_fn = keras_models.loss(tf.keras, workload)

        @tf.function
        def step(x, y):
            with tf.GradientTape() as tape:
                loss = loss_fn(y, model(x, training=True))
            variables = model.trainable_variables
            optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
            return loss

        self.step = step
        self.batches = [(tf.constant(x), tf.constant(y)) for x, y in batches]

    def first_step(self):
        loss = float(self.step(*self.batches[0]).numpy())
        return loss, self.model.get_weights()

    def run_round(self):
        for x, y in self.batches:
            self.step(x, y)

    def equations(self):
        (concrete,) = self.step._cache.values()
        return len(concrete.optimized_graph.eqns)


def runners(workload, weights, batches):
    return [TapeflowTraced(workload, weights, batches), TapeflowFit(workload, weights, batches)]
