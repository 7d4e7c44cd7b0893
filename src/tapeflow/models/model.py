"""``Model``: a Layer that trains — compile / fit / evaluate / predict, as Keras.

``train_step`` is the one place a training step happens, and can be
overridden as in Keras.  An optimizer that needs the loss itself (Newton,
Levenberg-Marquardt) gets the batch's ``optimizers.Objective``, with no closure for
the user to write; ``compile(input_gradient=...)`` adds an input-gradient penalty.

As in Keras, ``fit``/``evaluate``/``predict`` run ``train_step``/``test_step``/
``predict_step`` traced by ``tf.function`` (``model.train_function`` and
friends): the forward pass, the gradient, the optimizer's update,
BatchNormalization's moving statistics, the random draws of Dropout and the
metrics' state are one graph, traced once for full batches and at most once
more for a short last batch (see ``make_train_function``).  Callbacks and the
progress bar read the metrics' results once per batch, or once per
``compile(steps_per_execution=N)`` batches, run in one compiled call
(``models.executions``).  ``compile(run_eagerly=True)`` (or
``tf.config.run_functions_eagerly(True)``) runs the Python steps instead; so does
a train step with the Newton optimizer, whose step reads loss values to accept
or reject trial points.  An input-gradient penalty (a tape inside the step's
tape) traces like the rest.
"""
import functools
import itertools
import numbers

import numpy as np

from .. import backend
from ..callbacks import base as callbacks_module  # not the package: its backup writes models
from .. import device as device_module
from ..callbacks.base import BatchLogs, python_float
from .. import losses as losses_module
from .. import metrics as metrics_module
from .. import optimizers as optimizers_module
from .. import replication
from ..core import nest
from ..core.context import context
from ..core.tape import GradientTape
from ..core.tensor import Tensor
from ..layers.base import Layer
from ..ops.reduce import reduce_sum
from ..ops.shape import concat
from ..tracing.function import function
from . import batching as data_module
from . import executions
from . import model_classes
from . import feeds
from . import multi_output
from . import weights_io
from .auto_config import auto_config, constructor_arguments

__all__ = ["Model"]


@model_classes.register
class Model(Layer):
    """Group layers into an object with training and inference features.

    ``Model(inputs, outputs)`` makes a functional model (``models.functional.Functional``,
    a graph of layer calls); a subclass writes ``call`` instead, or builds a graph in its
    ``__init__`` and hands it to ``super().__init__(inputs=..., outputs=...)``: a subclassed
    functional model (Keras 3's), whose class then derives from Functional.
    """

    # fit's, evaluate's and predict's compiled steps: compile makes them again, so a SavedModel
    # of the model does not hold them (they read the metrics' Python functions, never saved)
    _not_saved = ("train_function", "test_function", "predict_function")

    def __new__(cls, *args, **kwargs):
        if cls is Model and (args or "inputs" in kwargs or "outputs" in kwargs):
            functional = model_classes.model_class("Functional")
            return functional.__new__(functional)
        model = super().__new__(cls)
        # Keras 3 records a subclass's constructor arguments: its config when it writes none
        object.__setattr__(model, "_auto_config", constructor_arguments(cls, args, kwargs))
        return model

    def __init__(self, *args, **kwargs):
        if args or "inputs" in kwargs or "outputs" in kwargs:
            if not _graph_arguments(args, kwargs):
                raise TypeError(f"{type(self).__name__}.__init__: a model takes its inputs and "
                                f"outputs together (super().__init__(inputs=..., outputs=...)), "
                                f"or neither (a subclass that writes call); got "
                                f"{len(args)} positional argument(s) and keywords "
                                f"{sorted(kwargs)}")
            model_classes.model_class("Functional").become(self, *args, **kwargs)
            return
        super().__init__(**kwargs)
        self.optimizer = None
        self.loss = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self.input_gradient = None
        self._compiled_metrics = []
        self._weighted_metrics = []
        self._accuracies_to_choose = False  # an "accuracy" string waits for the first batch
        self._metric_log_names = []
        self._loss_tracker = None
        self._output_loss_trackers = []
        self._output_name = None  # a one-output functional model's, once compiled
        self.run_eagerly = False
        self.steps_per_execution = 1
        self.train_function = self.test_function = self.predict_function = None

    # --- compile ---------------------------------------------------------------------------------
    def compile(self, optimizer="rmsprop", loss=None, metrics=None, input_gradient=None,
                loss_weights=None, run_eagerly=None, jit_compile=None, steps_per_execution=1,
                weighted_metrics=None):
        """Choose the optimizer, loss, metrics and (optionally) an input-gradient penalty.

        ``run_eagerly=True`` runs fit/evaluate/predict's steps as Python, not as traced
        graphs (for debugging; Keras's option).

        ``steps_per_execution=N`` (or "auto") runs N batches in each call of the compiled
        step, with batch callbacks and logs once per call, as Keras does
        (``models.executions``).

        A metric given as a string is logged under that string, as in Keras
        (``metrics=["mae"]`` logs ``mae`` and ``val_mae``); "accuracy" / "acc"
        becomes the binary, categorical or sparse accuracy that fits the data,
        chosen at the first batch.

        As in Keras, ``sample_weight`` (and ``fit``'s ``class_weight``) weights the loss
        and the ``weighted_metrics`` only; ``metrics`` are plain means over the samples.
        Log names follow Keras 3: a name ``metrics`` repeats gets ``_1``, ``_2``; a weighted
        metric with a name a plain one already has is logged as ``weighted_<name>``.
        """
        self.optimizer = optimizers_module.get(optimizer)
        if self.dtype_policy.name == "mixed_float16" and \
                not isinstance(self.optimizer, optimizers_module.LossScaleOptimizer):
            # Keras 3's: float16 gradients need loss scaling, so a mixed_float16 model has it
            self.optimizer = optimizers_module.LossScaleOptimizer(self.optimizer)
        # slots keyed as the weights file keys the weights, not by the layer counters' names
        self.optimizer._key_by_structure(functools.partial(weights_io.weight_keys, self))
        names = getattr(self, "output_names", None)  # a functional model's outputs
        self.loss = self._compiled_loss(loss, loss_weights, names)
        if names is not None and len(names) > 1:
            self._compiled_metrics = multi_output.output_metrics(metrics, names, _as_metric)
            self._weighted_metrics = multi_output.output_metrics(weighted_metrics, names,
                                                                 _as_metric)
        else:
            if names is not None:  # one output: its metrics may be given in a dict
                metrics, weighted_metrics = (
                    _only_output(v, names[0], what) for v, what in (
                        (metrics, "metrics"), (weighted_metrics, "weighted_metrics")))
            self._compiled_metrics = _as_metrics(metrics)
            self._weighted_metrics = _as_metrics(weighted_metrics)
        # a one-output model takes y (and its predictions, sample_weight) in a dict keyed by
        # its output's name or a list of one, as Keras does
        self._output_name = names[0] if names is not None and len(names) == 1 and \
            not isinstance(self.loss, multi_output.OutputLosses) else None
        self._metric_log_names = _log_names(self._compiled_metrics, self._weighted_metrics)
        self._compile_metrics = {"metrics": metrics, "weighted_metrics": weighted_metrics}
        self._accuracies_to_choose = any(isinstance(m, str) for m in
                                         self._compiled_metrics + self._weighted_metrics)
        self._loss_tracker = metrics_module.Mean(name="loss")
        self._output_loss_trackers = [metrics_module.Mean(name=f"{n}_loss") for n in
                                      self.loss.names] \
            if isinstance(self.loss, multi_output.OutputLosses) else []
        if input_gradient is not None and not hasattr(input_gradient, "loss_and_penalty"):
            from ..input_gradient import InputGradient
            input_gradient = InputGradient(float(input_gradient))
        self.input_gradient = input_gradient
        self.run_eagerly = bool(run_eagerly)
        self.steps_per_execution = executions.checked(steps_per_execution)
        self._distribute_strategy = replication.current()  # MPIStrategy.scope()
        self.train_function = self.test_function = self.predict_function = None  # traced anew
        self.compiled = True

    def _compiled_loss(self, loss, loss_weights, names):
        """compile's ``loss`` as one Loss, or an ``OutputLosses`` of several."""
        if loss is None:
            return None
        if _losses_for_its_own_predictions(self, loss, names):
            return multi_output.OutputLosses(loss, loss_weights, None, _as_loss)
        if names is not None and len(names) > 1:
            return multi_output.OutputLosses(loss, loss_weights, names, _as_loss)
        if names is not None:  # one output: its loss may be given in a list or dict
            loss = _only_output(loss, names[0], "loss")
        return _as_loss(loss)

    @property
    def metrics(self):
        """The loss tracker, then the compiled metrics and the weighted metrics (an "accuracy"
        once the first batch chose it)."""
        return ([self._loss_tracker] if self._loss_tracker is not None else []) + \
            self._output_loss_trackers + [m for _, m in self._named_metrics()]

    @property
    def metrics_names(self):
        """The names in the logs, in ``metrics`` order."""
        return ([self._loss_tracker.name] if self._loss_tracker is not None else []) + \
            [t.name for t in self._output_loss_trackers] + \
            [name for name, _ in self._named_metrics()]

    def _named_metrics(self):
        """``[(log name, metric), ...]`` of the compiled and weighted metrics made so far."""
        return [(name, m) for name, m in zip(self._metric_log_names,
                                             self._compiled_metrics + self._weighted_metrics)
                if not isinstance(m, str)]

    def reset_metrics(self):
        for m in self.metrics:
            m.reset_state()

    def _named_results(self):
        """``[(log name, metric), ...]`` of ``metrics``: the compiled ones under the names
        their logs use, a subclass's own ``metrics`` under their names (as Keras names them)."""
        if type(self).metrics is Model.metrics:
            return list(zip(self.metrics_names, self.metrics))
        return [(m.name, m) for m in self.metrics]

    def _metrics_result(self):
        """``{log name: result}`` of every metric (Keras 3's ``get_metrics_result``)."""
        return {name: m.result() for name, m in self._named_results()}

    def _logs_are_metrics(self, logs):
        """Whether a step's ``logs`` are the metrics' results, so that an epoch's logs may be
        read from the metrics: Keras 3's test in ``_get_metrics_result_or_logs`` (the same
        names), and the same values now, so that a ``train_step`` returning a value of its own
        under a metric's name (its batch's loss, the loss tracker never updated) keeps its
        logs.  Not under a strategy, which reduces the metrics' state in the step."""
        if replication.of(self) is not None or not isinstance(logs, dict):
            return False
        named = self._named_results()
        if set(logs) != {name for name, _ in named}:
            return False
        for name, metric in named:
            logged, result = python_float(logs[name]), python_float(metric.result())
            if not (isinstance(logged, float) and isinstance(result, float)
                    and (logged == result or logged != logged and result != result)):
                return False
        return True

    # --- one step --------------------------------------------------------------------------------
    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True):
        """The compiled loss plus ``self.losses`` (the layers' ``add_loss`` losses of this
        call and the weights' regularization penalties), each summed to a scalar (Keras 3's)."""
        extra = [loss if not loss.ndim else reduce_sum(loss) for loss in self.losses]
        if self.loss is None:
            if extra:  # a model trained on its add_loss losses alone (Keras 3's)
                return losses_module.sum_of_losses(extra)
            raise ValueError(f"{self.name}: no loss; pass loss= to compile(), add losses in a "
                             f"layer's call with add_loss, or override compute_loss / "
                             f"train_step")
        if y is None:
            raise ValueError(f"{self.name}: the compiled loss needs targets, but no y was given "
                             f"(pass y to fit/evaluate, or override compute_loss / train_step)")
        y, y_pred, sample_weight = self._as_one_output(y, y_pred, sample_weight)
        total = self.loss(y, y_pred, sample_weight=sample_weight)
        if extra:  # the compiled loss is in floatx, a float64 model's penalties in float64
            total = losses_module.sum_of_losses([total, losses_module.sum_of_losses(extra)])
        return total

    def _loss_and_prediction(self, x, y, sample_weight):
        if self.input_gradient is not None:
            return self.input_gradient.loss_and_penalty(self, x, y, sample_weight)
        y_pred = self(x, training=True)
        return self.compute_loss(x, y, y_pred, sample_weight), y_pred

    def _as_one_output(self, y, y_pred, sample_weight):
        """A one-output model's targets, predictions and weights as one tensor each, where
        they come in a dict keyed by its output's name or a list of one (Keras's)."""
        if self._output_name is None:
            return y, y_pred, sample_weight
        return (multi_output.one_output(y, self._output_name, "y"),
                multi_output.one_output(y_pred, self._output_name, "the model's output"),
                multi_output.one_output(sample_weight, self._output_name, "sample_weight"))

    def train_step(self, data):
        """One optimization step on one batch; returns the metrics' current values."""
        x, y, sample_weight = _unpack(data)
        self._forget_recorded_losses()
        if not self.built:
            self(x, training=False)  # build from the first batch, so the variables exist
        if getattr(self.optimizer, "needs_loss_fn", False):
            # a second-order step (Newton, Levenberg-Marquardt) evaluates the loss itself, at
            # several points: the batch's Objective replays its random draws each time
            objective = optimizers_module.Objective(self, x, y, sample_weight)
            self.optimizer.minimize(objective)
            loss, y_pred = objective.finish()
        else:
            variables = self.trainable_variables
            with GradientTape() as tape:
                loss, y_pred = self._loss_and_prediction(x, y, sample_weight)
                scaled_loss = self.optimizer.scale_loss(loss)  # a LossScaleOptimizer's scale
            grads = tape.gradient(scaled_loss, variables)
            self.optimizer.apply_gradients(zip(grads, variables))
        return self._without_traced_losses(self.compute_metrics(x, y, y_pred, sample_weight,
                                                                loss))

    def _without_traced_losses(self, logs):
        """``logs``, once a traced step has used its ``losses``: they are let go, so that
        ``model.losses`` never hands out tensors of a finished trace (an eager step keeps them,
        as Keras does, until the next call)."""
        if context().trace is not None:
            self._clear_losses()
        return logs

    def test_step(self, data):
        x, y, sample_weight = _unpack(data)
        self._forget_recorded_losses()
        y_pred = self(x, training=False)
        loss = self.compute_loss(x, y, y_pred, sample_weight, training=False)
        return self._without_traced_losses(self.compute_metrics(x, y, y_pred, sample_weight,
                                                                loss))

    def predict_step(self, data):
        x = data[0] if isinstance(data, (tuple, list)) else data
        return self(x, training=False)

    def compute_metrics(self, x, y, y_pred, sample_weight, loss):
        """Update the loss tracker and the metrics; return the logs ``{name: value}``.
        ``sample_weight`` weights the loss's mean and the weighted metrics, not ``metrics``.
        Each output's loss is logged as this step's ``compute_loss`` computed it (Keras's
        compiled loss logs them as it computes them), so a ``compute_loss`` that makes its own
        predictions logs the losses of those."""
        y, y_pred, sample_weight = self._as_one_output(y, y_pred, sample_weight)
        self._compiled_metrics = _chosen_accuracies(self._compiled_metrics, y, y_pred)
        self._weighted_metrics = _chosen_accuracies(self._weighted_metrics, y, y_pred)
        # weighted by the batch's size, so that a short last batch counts for what it holds
        n = _batch_length(x, y_pred)
        self._loss_tracker.update_state(loss, sample_weight=n)
        if self._output_loss_trackers:  # each output's own loss, as Keras logs it
            values = self.loss.take_recorded()
            if values is None:  # a train_step of the user's that computed no compiled loss
                values = dict(self.loss.per_output(y, y_pred, sample_weight))
            for tracker, name in zip(self._output_loss_trackers, self.loss.names):
                if name in values:
                    tracker.update_state(values[name], sample_weight=n)
        for m in self._compiled_metrics:
            m.update_state(y, y_pred)
        for m in self._weighted_metrics:
            m.update_state(y, y_pred, sample_weight=sample_weight)
        logs = {self._loss_tracker.name: self._loss_tracker.result()}
        for tracker, loss_fn in zip(self._output_loss_trackers, getattr(self.loss, "losses", ())):
            if loss_fn is not None:  # an output with no loss logs none
                logs[tracker.name] = tracker.result()
        for name, m in self._named_metrics():
            logs[name] = m.result()
        return logs

    def _forget_recorded_losses(self):
        """A step starts: output losses computed outside it (a ``compute_loss`` call of the
        user's) are not this step's to log."""
        if isinstance(self.loss, multi_output.OutputLosses):
            self.loss.take_recorded()

    # --- the step functions the loops call --------------------------------------------------------
    # Traced once per batch shape: one graph for the full batches and one for a short last
    # batch, for every epoch.  (reduce_retracing=True would trace a training step three times
    # over several epochs: its graph holds the batch size (a mean's gradient scales by 1/n), so
    # the relaxed signature falls back to one graph per shape, and the full batches' shape is
    # traced again once the signature has been relaxed.)
    def make_train_function(self):
        """``train_step``, traced unless the model runs eagerly (Keras's method)."""
        return replication.train_function(self, self._step_function("train"))

    def make_test_function(self):
        return self._step_function("test")

    def make_predict_function(self):
        return self._step_function("predict")

    def _step_function(self, kind):
        """``<kind>_step``, or its tf.function, made once and kept as ``<kind>_function``."""
        step = getattr(self, f"{kind}_step")
        if self._runs_eagerly(kind):
            return step
        traced = getattr(self, f"{kind}_function")
        if traced is None:
            traced = function(step)
            setattr(self, f"{kind}_function", traced)
        return traced

    def _multi_step(self, kind, step):
        """``step`` run on a list of batches in one call (``models.executions``): made once and
        kept while ``step`` is the step function, so its compiled graphs are too."""
        kept = self.__dict__.get("_executions", {}).get(kind)
        if kept is None or kept[0] is not step:
            kept = (step, executions.multi_step(step, collect=kind == "predict"))
            self.__dict__.setdefault("_executions", {})[kind] = kept
        return kept[1]

    def _build_on(self, batch):
        """Build the model eagerly on its first batch, as the eager step does first thing: its
        weights are drawn from the random state as eagerly (a trace gives back its draws).
        An "accuracy" metric's kind is chosen from that batch too, so that every metric's
        state exists before a step is traced (MPIStrategy sums it in the graph)."""
        if not self.built:
            self(batch[0] if isinstance(batch, (tuple, list)) else batch, training=False)
        if self._accuracies_to_choose and isinstance(batch, (tuple, list)):
            x, y, _ = _unpack(batch)
            if y is not None:
                y_pred = self(x, training=False)
                self._compiled_metrics = _chosen_accuracies(self._compiled_metrics, y, y_pred)
                self._weighted_metrics = _chosen_accuracies(self._weighted_metrics, y, y_pred)
            self._accuracies_to_choose = False

    def _runs_eagerly(self, kind):
        if self.run_eagerly or context().functions_run_eagerly:
            return True
        # a second-order optimizer (Newton, Levenberg-Marquardt) accepts or rejects trial
        # steps from loss values it reads as numbers: its train step runs eagerly (its test
        # and predict steps trace).
        return kind == "train" and getattr(self.optimizer, "needs_loss_fn", False)

    # --- loops -----------------------------------------------------------------------------------
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Train for ``epochs`` epochs; returns a History (also ``model.history``).

        ``x`` is arrays (with ``y``), or a ``tf.data.Dataset``, a ``PyDataset`` or a Python
        generator of batches (``models.feeds``; a generator is read once, so several epochs
        need ``steps_per_epoch`` and one that loops).  ``validation_split`` holds out the last fraction of the
        samples (before shuffling), as Keras does.  ``class_weight`` (``{class index:
        weight}``) weights each training sample by its label's class, times its
        ``sample_weight`` (``data.class_sample_weight``); validation data are not
        class-weighted.  Callbacks get plain floats in their logs.
        """
        self._require_compiled("fit")
        epochs = _count(epochs, "epochs", "fit")
        validation_freq = _count(validation_freq, "validation_freq", "fit", minimum=1)
        if feeds.is_batch_source(x):
            _refuse_with_dataset("fit", y=y, sample_weight=sample_weight, batch_size=batch_size,
                                 validation_split=validation_split or None)
            feeds.check_rereadable(x, steps_per_epoch, epochs - initial_epoch, "fit", "x",
                                   "steps_per_epoch")
            feed = feeds.batch_source_feed(x, self.dtype, "fit", steps_per_epoch, class_weight)
            batch_size = None
        else:
            x, y, sample_weight = data_module.as_arrays(x, y, sample_weight, self.dtype, "fit")
            batch_size = _batch_size(batch_size, "fit")
            if validation_split and validation_data is None:
                (x, y, sample_weight), validation_data = data_module.split_validation(
                    x, y, sample_weight, validation_split)
            if class_weight is not None:
                sample_weight = data_module.class_sample_weight(y, sample_weight, class_weight,
                                                                self.dtype)
            feed = feeds.ArrayFeed(x, y, sample_weight, batch_size)
        if feeds.is_batch_source(validation_data):
            feeds.check_rereadable(validation_data, validation_steps, sum(
                (e + 1) % validation_freq == 0 for e in range(initial_epoch, epochs)), "fit",
                "validation_data", "validation_steps")
        elif validation_data is not None:
            if not isinstance(validation_data, (tuple, list)) or len(validation_data) not in (2, 3):
                raise ValueError("fit: validation_data must be a tuple (x_val, y_val), "
                                 "(x_val, y_val, sample_weight_val), a tf.data.Dataset, a "
                                 "PyDataset or a generator")
            validation_data = data_module.as_arrays(*_unpack(validation_data), self.dtype,
                                                    "fit(validation_data)")
        steps = feed.steps
        verbose = _verbosity(verbose)
        history = callbacks_module.History()
        callbacks, verbose = replication.fit_callbacks(self, callbacks, verbose)
        user_callbacks = list(callbacks or [])
        progbar = [] if not verbose or any(isinstance(cb, callbacks_module.ProgbarLogger)
                                           for cb in user_callbacks) \
            else [callbacks_module.ProgbarLogger(verbose)]
        # History after the user's callbacks, so that what they add to the logs is recorded
        cbs = callbacks_module.CallbackList(
            user_callbacks + [history] + progbar, self,
            {"epochs": epochs, "steps": steps, "verbose": verbose, "batch_size": batch_size,
             "samples": feed.samples, "do_validation": validation_data is not None})
        self.stop_training = False
        train_steps = self._multi_step("train", self.make_train_function())
        per_execution = executions.per_execution(self.steps_per_execution, steps)
        self._initial_epoch = None
        # (steps done, the epoch's order seed): a callback resuming mid-epoch sets it at
        # on_train_begin; fit skips those batches of that order, drawing nothing for it
        self._initial_step = None
        _build_for_restore(self, user_callbacks, feed)
        cbs.on_train_begin()
        if self._initial_epoch is not None:  # BackupAndRestore restored a run: it goes on
            initial_epoch = self._initial_epoch
        skip, order_seed = self._initial_step or (0, None)
        # Keras 3 reads an epoch's logs from the metrics where the steps' logs are theirs; then
        # a step whose logs no callback reads runs for its effects only (its results are not
        # computed).  Decided on the fit's first step's logs.
        logs_from_metrics = None
        effects_only = not cbs.wants_batch_logs and replication.of(self) is None
        epoch_logs = {}
        for epoch in range(initial_epoch, epochs):
            self.reset_metrics()
            cbs.on_epoch_begin(epoch)
            logs, stepped = {}, False
            # each epoch's order drawn from the random state as the epoch starts, so that a run
            # resumed at an epoch with that state restored sees the same order; kept in
            # _epoch_order_seed for a checkpoint written mid-epoch
            if order_seed is None and shuffle and feed.shuffles:
                order_seed = _shuffle_seed()
            self._epoch_order_seed = order_seed
            rng = None if order_seed is None else np.random.default_rng(order_seed)
            # the batches done before the checkpoint this fit resumed from are skipped; the
            # rest run steps_per_execution at a time, the callbacks called once per execution
            batches = itertools.islice(feed.epoch(rng), skip, None)
            for step, group in executions.groups(batches, per_execution, start=skip):
                cbs.on_train_batch_begin(step)
                self._build_on(group[0])
                stepped = True
                if effects_only and logs_from_metrics:
                    train_steps.for_effects(group)
                else:
                    logs = train_steps(group)
                    if logs_from_metrics is None:
                        logs_from_metrics = self._logs_are_metrics(logs)
                    if cbs.wants_batch_logs:
                        cbs.on_train_batch_end(step + per_execution - 1, BatchLogs(dict(logs)))
                if self.stop_training:
                    break
            feed.end_epoch()
            skip, order_seed = 0, None
            epoch_logs = _floats(self._metrics_result() if stepped and logs_from_metrics
                                 else logs)
            if validation_data is not None and (epoch + 1) % validation_freq == 0:
                if feeds.is_batch_source(validation_data):
                    val = self.evaluate(validation_data, steps=validation_steps, verbose=0,
                                        return_dict=True)
                else:
                    vx, vy, vw = validation_data
                    val = self.evaluate(vx, vy, sample_weight=vw, verbose=0, return_dict=True,
                                        batch_size=validation_batch_size or batch_size)
                epoch_logs.update({f"val_{k}": v for k, v in val.items()})
            cbs.on_epoch_end(epoch, epoch_logs)
            if self.stop_training:
                break
        cbs.on_train_end(epoch_logs)
        self.history = history
        return history

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """The loss (and metrics) on the given data (arrays, or a ``tf.data.Dataset``), in
        inference mode: a float when there are no metrics, else a list in ``metrics_names``
        order (a dict with ``return_dict``)."""
        self._require_compiled("evaluate")
        strategy = replication.evaluating_strategy(self, x, steps)  # MPIStrategy: its shards
        if strategy is not None:
            return strategy.evaluate(self, x, y, batch_size, sample_weight, return_dict)
        feed = self._feed(x, y, sample_weight, batch_size, steps, "evaluate")
        self.reset_metrics()
        logs = {}
        test_steps = self._multi_step("test", self.make_test_function())
        per_execution = executions.per_execution(self.steps_per_execution, feed.steps)
        logs_from_metrics = None  # as fit: the steps after the first run for their effects
        for _, group in executions.groups(feed.epoch(), per_execution):
            self._build_on(group[0])
            if logs_from_metrics:
                test_steps.for_effects(group)
            else:
                logs = test_steps(group)
                if logs_from_metrics is None:
                    logs_from_metrics = self._logs_are_metrics(logs)
        return _as_returned(self._metrics_result() if logs_from_metrics else logs, return_dict)

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Outputs for ``x`` (arrays, or a ``tf.data.Dataset`` whose elements' first part is
        the input), in batches, as a numpy array."""
        strategy = replication.evaluating_strategy(self, x, steps)  # MPIStrategy: its shards
        if strategy is not None:
            return strategy.predict(self, x, batch_size)
        feed = self._feed(x, None, None, batch_size, steps, "predict")
        predict_steps = self._multi_step("predict", self.make_predict_function())
        per_execution = executions.per_execution(self.steps_per_execution, feed.steps)
        outputs = []
        for _, group in executions.groups(feed.epoch(), per_execution):
            self._build_on(group[0])
            outputs.extend(predict_steps([batch[:1] for batch in group]))
        if not outputs:
            raise ValueError("predict: x has no samples")
        # several outputs (a list or dict): each concatenated over the batches
        flat = [nest.flatten(o) for o in outputs]
        return nest.pack_sequence_as(outputs[0], [concat(list(parts), axis=0).numpy()
                                                  for parts in zip(*flat)])

    # --- one batch (Keras's *_on_batch), with fit's traced step functions ------------------------
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None, return_dict=False):
        """One training step on the batch ``x``; the metrics' values as ``evaluate`` returns them.
        As in Keras 3, the metrics go on accumulating over calls until ``reset_metrics()``."""
        self._require_compiled("train_on_batch")
        batch = self._one_batch(x, y, sample_weight, class_weight, "train_on_batch")
        return _as_returned(self.make_train_function()(batch), return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        """The loss and metrics on the batch ``x``, in inference mode (accumulating, as
        ``train_on_batch``)."""
        self._require_compiled("test_on_batch")
        batch = self._one_batch(x, y, sample_weight, None, "test_on_batch")
        return _as_returned(self.make_test_function()(batch), return_dict)

    def predict_on_batch(self, x):
        """The model's outputs for the batch ``x``, as numpy arrays."""
        batch = self._one_batch(x, None, None, None, "predict_on_batch")
        return nest.map_structure(lambda t: t.numpy(), self.make_predict_function()(batch))

    def _one_batch(self, x, y, sample_weight, class_weight, where):
        x, y, sample_weight = data_module.as_arrays(x, y, sample_weight, self.dtype, where)
        if class_weight is not None:
            sample_weight = data_module.class_sample_weight(y, sample_weight, class_weight,
                                                            self.dtype, where)
        n = data_module.num_samples(x)
        if n == 0:
            raise ValueError(f"{where}: x has no samples")
        batch = next(data_module.batches(x, y, sample_weight, n))
        self._build_on(batch)
        return batch

    def _feed(self, x, y, sample_weight, batch_size, steps, where):
        if feeds.is_batch_source(x):
            _refuse_with_dataset(where, y=y, sample_weight=sample_weight, batch_size=batch_size)
            return feeds.batch_source_feed(x, self.dtype, where, steps)
        x, y, sample_weight = data_module.as_arrays(x, y, sample_weight, self.dtype, where)
        return feeds.ArrayFeed(x, y, sample_weight, _batch_size(batch_size, where))

    def _require_compiled(self, what):
        if not self.compiled:
            raise RuntimeError(f"You must call compile() on model '{self.name}' before {what}()")

    # --- inspection and weights ----------------------------------------------------------------
    def build(self, input_shape):
        """A subclassed model's layers build as its ``call`` first runs; the input's shape is
        kept, so that ``summary()`` can show its layers' output shapes."""
        self._build_input_shape = tuple(input_shape) if isinstance(input_shape, (tuple, list)) \
            else input_shape
        self.built = True

    def to_device(self, device_name):
        """Move this built model to ``device_name`` ("/GPU:0", "/CPU:0"): every variable's array
        (weights, the optimizer's ``iterations``, learning rate and slots, metric state) is
        copied there once, through the host, and keeps its identity, so a model trained on one
        device goes on training or predicting on another.  Traced step functions are dropped
        (their constants live on the old device) and are traced again on the next call.
        Returns the model.  Run it inside ``tf.device(device_name)`` so new tensors meet it."""
        moved = set()
        holders = [self] + ([self.optimizer] if getattr(self, "optimizer", None) is not None else [])
        holders += list(self.metrics) if self.compiled else []
        with device_module.device(device_name):  # checks the name and that the device exists
            for holder in holders:
                for variable in holder.variables:
                    if id(variable) not in moved:
                        moved.add(id(variable))
                        variable._value = backend.to_device(backend.to_host(variable._value))
        self.train_function = self.test_function = self.predict_function = None
        return self

    def summary(self, print_fn=None):
        from .summary import summary_lines
        for line in summary_lines(self):
            (print_fn or print)(line)

    def save_weights(self, filepath, overwrite=True):
        """Write the weights, and a compiled model's optimizer state, to an HDF5 file in
        Keras 3's ``.weights.h5`` layout (``models.weights_io`` says how)."""
        weights_io.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False, **kwargs):
        """Read ``save_weights``'s file (or a whole-model save): the weights, and the optimizer
        state into a model compiled with the same optimizer class.  ``skip_mismatch=True``
        leaves the layers that do not match as they are (Keras 3's argument)."""
        weights_io.load_weights(self, filepath, skip_mismatch=skip_mismatch, **kwargs)

    def save(self, filepath, overwrite=True, include_optimizer=True, **kwargs):
        """Write the architecture, weights, optimizer state and traced call to ``filepath``
        (a directory, or one file ending in .keras/.h5): see ``saving.keras_saving``."""
        from ..saving.keras_saving import save_model
        save_model(self, filepath, overwrite=overwrite, include_optimizer=include_optimizer,
                   **kwargs)

    def export(self, filepath, format="tf_saved_model", verbose=True, input_signature=None):
        """Keras 3's export: a SavedModel for serving, its endpoint ``serve`` (see
        ``saving.export``)."""
        from ..saving.export import export_model
        export_model(self, filepath, format=format, verbose=verbose,
                     input_signature=input_signature)

    def get_config(self):
        """A subclass's config: its constructor's arguments (see ``models.auto_config``); a
        subclass that writes get_config and calls this gets the base keys only (Keras's)."""
        if type(self).get_config is not Model.get_config:
            return super().get_config()
        return auto_config(self, super().get_config())

    def get_compile_config(self):
        return None

    def get_layer(self, name=None, index=None):
        """A layer of the model by its name or its index in ``model.layers`` (Keras's)."""
        layers = self.layers
        if (name is None) == (index is None):
            raise ValueError(f"get_layer: give name= or index= (one of them), got name={name!r}, "
                             f"index={index!r}")
        if index is not None:
            if isinstance(index, bool) or not isinstance(index, numbers.Integral) or \
                    not -len(layers) <= index < len(layers):
                raise ValueError(f"get_layer: index {index!r} is not an index of the model's "
                                 f"{len(layers)} layers")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"get_layer: no layer named {name!r}; the layers are "
                         f"{[layer.name for layer in layers]}")

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """A functional model's config (Keras saves those as class "Model" or "Functional", or
        a subclass's name) makes one when ``cls`` takes inputs and outputs; any other config
        goes to the constructor, as a Layer's does (see ``functional.model_from_config``)."""
        return model_classes.model_class("Functional").revive(cls, config, custom_objects)


def _graph_arguments(args, kwargs):
    """Whether a Model constructor's arguments are a graph's inputs and outputs (Keras's)."""
    return len(args) == 2 or (len(args) == 1 and "outputs" in kwargs) or \
        ("inputs" in kwargs and "outputs" in kwargs)


def _refuse_with_dataset(where, **given):
    """Arguments a Dataset, PyDataset or generator replaces (it yields its own batches, labels
    and weights)."""
    extra = [name for name, value in given.items() if value is not None]
    if extra:
        raise ValueError(f"{where}: x is a tf.data.Dataset, PyDataset or generator, which "
                         f"yields its own batches of (x, y[, sample_weight]); do not also pass "
                         f"{', '.join(extra)}")


def _build_for_restore(model, callbacks, feed):
    """Build an unbuilt model on the first batch when a callback has state to load into it
    (BackupAndRestore, which then restores the random state too, so the draws made here do
    not matter)."""
    if not model.built and any(getattr(cb, "needs_built_model", False) for cb in callbacks):
        model._build_on(feed.first_batch())


def _as_loss(identifier):
    """A Loss object (reducing over the batch, taking sample weights), as Keras's compile makes."""
    loss = losses_module.get(identifier)
    if isinstance(loss, losses_module.Loss):
        return loss
    return losses_module.LossFunctionWrapper(loss, name=getattr(loss, "__name__", None))


def _only_output(value, name, what):
    """A one-output model's ``loss`` (metrics) given in a list of one or a dict by its name
    (of a list of one, for a loss)."""
    if isinstance(value, dict):
        if set(value) - {name}:
            raise ValueError(f"compile({what}=...): {sorted(set(value) - {name})} are not outputs "
                             f"of the model; its output is {name!r}")
        value = value.get(name)
    if what == "loss" and isinstance(value, (list, tuple)):
        if len(value) != 1:
            raise ValueError(f"compile(loss=...): {len(value)} losses for the model's one output "
                             f"(a model whose compute_loss makes a prediction per loss takes "
                             f"several: override compute_loss)")
        return value[0]
    return value


def _losses_for_its_own_predictions(model, loss, names):
    """Whether compile's ``loss`` is a list that is not one loss per output, given to a model
    that overrides ``compute_loss``: Keras 3 takes it then (that ``compute_loss`` hands the
    compiled loss a prediction per loss), pairs the losses with those predictions in order
    and logs each under its own name."""
    if not isinstance(loss, (list, tuple)) or type(model).compute_loss is Model.compute_loss:
        return False
    return len(loss) != len(names) if names is not None else len(loss) > 1


def _as_metrics(identifiers):
    """compile's ``metrics`` (or ``weighted_metrics``): one metric or a list of them."""
    if isinstance(identifiers, (str, dict)) or callable(identifiers):
        identifiers = [identifiers]
    return [_as_metric(m) for m in (identifiers or [])]


def _log_names(metrics, weighted_metrics):
    """Keras 3's log names: each metric's name (an "accuracy" string's own), ``_1``, ``_2``
    for repeats, and ``weighted_<name>`` for a weighted metric a plain one shares a name with."""
    counts = {}

    def unique(name):
        n = counts.get(name, 0)
        counts[name] = n + 1
        return name if n == 0 else f"{name}_{n}"
    names = [unique(_metric_name(m)) for m in metrics]
    for m in weighted_metrics:
        name = _metric_name(m)
        names.append(unique(name if name not in counts else f"weighted_{name}"))
    return names


def _metric_name(metric):
    return metric if isinstance(metric, str) else metric.name


def _chosen_accuracies(metrics, y, y_pred):
    """``metrics`` with each "accuracy" string made the accuracy that fits the data."""
    if not any(isinstance(m, str) for m in metrics):
        return metrics
    return [metrics_module.match_accuracy(y, y_pred, name=m) if isinstance(m, str) else m
            for m in metrics]


def _as_metric(identifier):
    """A compiled metric, named by the string it was given (Keras logs ``mae``, not
    ``mean_absolute_error``); "accuracy"/"acc" stays a string until the data choose its kind."""
    if isinstance(identifier, str) and identifier in ("accuracy", "acc"):
        return identifier
    metric = metrics_module.get(identifier)
    if metric is None:
        raise ValueError("compile: None is not a metric")
    if isinstance(identifier, str):
        metric.name = identifier
    return metric


def _unpack(data):
    if isinstance(data, (tuple, list)):
        data = tuple(data) + (None,) * (3 - len(data))
        return data[0], data[1], data[2]
    return data, None, None


def _batch_size(batch_size, where):
    if batch_size is None:
        return 32
    if isinstance(batch_size, bool) or not isinstance(batch_size, numbers.Integral) \
            or batch_size <= 0:
        raise ValueError(f"{where}: batch_size must be a positive integer, got {batch_size!r}")
    return int(batch_size)


def _count(value, what, where, minimum=0):
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < minimum:
        raise ValueError(f"{where}: {what} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def _verbosity(verbose):
    if verbose == "auto":
        return 1
    if verbose not in (0, 1, 2):
        raise ValueError(f"verbose must be 'auto', 0, 1 or 2, got {verbose!r}")
    return int(verbose)


def _batch_length(x, y_pred):
    """The batch's size: a Python int eagerly; inside a trace a tensor computed when the graph
    runs (so one graph serves full and short batches)."""
    for t in (nest.flatten(y_pred)[0], nest.flatten(x)[0]):
        shape = getattr(t, "shape", None)
        if shape is not None and len(shape) > 0:
            if context().trace is not None and isinstance(t, Tensor):
                return metrics_module.batch_size_tensor(t)
            return int(shape[0])
    return 1


def _as_returned(logs, return_dict):
    """evaluate's (and the *_on_batch methods') result: the logs as floats, a dict with
    ``return_dict``, else a list in ``metrics_names`` order (one float when there is one)."""
    logs = _floats(logs)
    if return_dict:
        return logs
    values = list(logs.values())
    return values[0] if len(values) == 1 else values


def _floats(logs):
    """Logs as callbacks and History get them: scalars as Python floats, anything else as is."""
    return {k: python_float(v) for k, v in logs.items()}


def _shuffle_seed():
    return int(context().random.rng.integers(2 ** 31))


