"""compile() for a model of several outputs: a loss (and metrics) per output, as Keras's.

``loss`` is one loss for every output, a list (one per output, in
``model.outputs`` order) or a dict keyed by output name (an output it leaves
out has no loss); ``loss_weights`` likewise (1.0 where not given).  The total
is the weighted sum of the outputs' losses; each is also logged as
``<output name>_loss``.  ``metrics`` is one list for every output, a list with an
entry per output (a metric or a list; at least one entry a list or None) or a dict
{output name: metric or list}; each is logged
as ``<output name>_<metric name>``.  ``y`` and ``sample_weight`` are a list in
output order or a dict keyed by output name (one ``sample_weight`` array
weights every output).

A model whose own ``compute_loss`` makes a prediction per loss (Keras 3's
``test_functional_list_outputs_with_custom_compute_loss``) takes a list of losses that is
not one per output: they are paired with those predictions in order, and each is logged
under its loss's name (``mean_squared_error_loss``), as Keras names a loss it cannot pair
with an output.
"""
from .. import metrics as metrics_module

__all__ = ["OutputLosses", "OutputMetric", "output_metrics", "per_output", "one_output"]


def per_output(value, names, what, broadcast=False):
    """``value`` (targets, predictions or weights) as one entry per output, in ``names`` order."""
    if isinstance(value, dict):
        unknown = sorted(str(k) for k in value if k not in names)
        if unknown:
            raise ValueError(f"{what}: {unknown} are not outputs of the model; its outputs are "
                             f"{names}")
        if not broadcast:
            missing = [k for k in names if k not in value]
            if missing:
                raise ValueError(f"{what}: no entry for the output(s) {missing}")
        return [value.get(k) for k in names]
    if isinstance(value, (list, tuple)) and not _numbers(value):
        if len(value) != len(names):
            raise ValueError(f"{what}: {len(value)} entries for the model's {len(names)} "
                             f"outputs {names}")
        return list(value)
    if broadcast or len(names) == 1:
        return [value] * len(names)
    raise ValueError(f"{what}: the model has {len(names)} outputs {names}; give a list in that "
                     f"order or a dict keyed by those names")


def one_output(value, name, what):
    """A one-output model's targets, predictions or weights given as Keras takes them: a dict
    keyed by the output's name, or a list of one entry, as that entry."""
    if isinstance(value, dict):
        return per_output(value, [name], what)[0]
    if isinstance(value, (list, tuple)) and len(value) == 1 and not _numbers(value):
        return value[0]
    return value


def _numbers(value):
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (int, float))


class OutputLosses:
    """The compiled loss of a model of several outputs: ``sum_i w_i loss_i(y_i, y_pred_i)``.

    ``names`` None: ``loss`` is a list of losses for the predictions a model's own
    ``compute_loss`` makes, each named after its loss (``_1``, ``_2`` for repeats).

    Each call records its losses per output until ``take_recorded`` takes them: the first
    call after that, so that a step whose optimizer evaluates the loss again at trial points
    (Newton) logs the losses at the step's start, as it logs the total."""

    def __init__(self, loss, loss_weights, names, as_loss):
        self.positional = names is None
        if self.positional:
            self.losses = [None if s is None else as_loss(s) for s in loss]
            self.names = _unique([str(i) if l is None else l.name
                                  for i, l in enumerate(self.losses)])
        else:
            self.names = list(names)
            specs = per_output(loss, self.names, "compile(loss=...)", broadcast=True)
            self.losses = [None if s is None else as_loss(s) for s in specs]
        self._recorded = None
        if all(l is None for l in self.losses):
            raise ValueError(f"compile(loss=...): no output of {self.names} has a loss")
        if loss_weights is None:
            weights = [1.0] * len(self.names)
        elif isinstance(loss_weights, (list, tuple)):  # numbers: per_output would broadcast them
            weights = list(loss_weights)
            if len(weights) != len(self.names):
                raise ValueError(f"compile(loss_weights=...): {len(weights)} weights for the "
                                 f"{len(self.names)} losses {self.names}")
        else:
            weights = per_output(loss_weights, self.names, "compile(loss_weights=...)",
                                 broadcast=True)
        try:
            self.weights = [1.0 if w is None else float(w) for w in weights]
        except (TypeError, ValueError):
            raise ValueError(f"compile: loss_weights must be numbers, got {loss_weights!r}") \
                from None

    def per_output(self, y, y_pred, sample_weight=None):
        """``[(output name, its loss), ...]`` for the outputs that have a loss."""
        ys = per_output(y, self.names, "y")
        preds = per_output(y_pred, self.names, "the model's outputs")
        weights = per_output(sample_weight, self.names, "sample_weight", broadcast=True)
        return [(name, loss(t, p, sample_weight=w))
                for name, loss, t, p, w in zip(self.names, self.losses, ys, preds, weights)
                if loss is not None]

    def __call__(self, y, y_pred, sample_weight=None):
        weight_of = dict(zip(self.names, self.weights))
        values = self.per_output(y, y_pred, sample_weight)
        if self._recorded is None:
            self._recorded = dict(values)
        total = None
        for name, value in values:
            term = value * weight_of[name] if weight_of[name] != 1.0 else value
            total = term if total is None else total + term
        return total

    def take_recorded(self):
        """``{name: loss}`` of the first call since the last take (None if none), forgotten."""
        recorded, self._recorded = self._recorded, None
        return recorded

    def config(self, loss_config):
        """What a save writes: each output's loss by ``loss_config``, and the weights (lists,
        in order, for losses paired with a ``compute_loss``'s own predictions)."""
        configs = [None if l is None else loss_config(l) for l in self.losses]
        if self.positional:
            return {"output_losses": configs, "loss_weights": list(self.weights)}
        return {"output_losses": dict(zip(self.names, configs)),
                "loss_weights": dict(zip(self.names, self.weights))}


def _unique(names):
    """``names`` with ``_1``, ``_2`` added to repeats (Keras 3's log names)."""
    seen = {}
    out = []
    for name in names:
        n = seen.get(name, 0)
        seen[name] = n + 1
        out.append(name if n == 0 else f"{name}_{n}")
    return out


class OutputMetric(metrics_module.Metric):
    """A compiled metric of one output, logged as ``<output name>_<metric name>``; an
    "accuracy" string becomes the accuracy that fits that output's data at the first batch."""

    def __init__(self, metric, names, index):
        label = metric if isinstance(metric, str) else metric.name
        super().__init__(name=f"{names[index]}_{label}")
        self._metric, self._names, self._index = metric, names, index
        self.name = self._name  # the metric's state is named after its output too

    @property
    def name(self):
        return self._name

    @name.setter
    def name(self, value):
        self._name = value
        if not isinstance(getattr(self, "_metric", None), (str, type(None))):
            self._metric.name = value

    @property
    def variables(self):
        return [] if isinstance(self._metric, str) else self._metric.variables

    def update_state(self, y_true, y_pred, sample_weight=None):
        t = per_output(y_true, self._names, "y")[self._index]
        p = per_output(y_pred, self._names, "the model's outputs")[self._index]
        w = per_output(sample_weight, self._names, "sample_weight", broadcast=True)[self._index]
        if isinstance(self._metric, str):
            self._metric = metrics_module.match_accuracy(t, p, name=self._name)
        self._metric.update_state(t, p, sample_weight=w)

    def result(self):
        if isinstance(self._metric, str):
            raise ValueError(f"{self._name}: no batch has been seen yet")
        return self._metric.result()

    def reset_state(self):
        if not isinstance(self._metric, str):
            self._metric.reset_state()


def output_metrics(metrics, names, as_metric):
    """compile's ``metrics`` for a model of several outputs: a flat list of OutputMetrics."""
    if metrics is None:
        return []
    if isinstance(metrics, dict):
        per = per_output(metrics, names, "compile(metrics=...)", broadcast=True)
    elif isinstance(metrics, (list, tuple)) and metrics and \
            any(m is None or isinstance(m, (list, tuple)) for m in metrics):
        # an entry per output (a metric or a list of them): one list for every output never
        # nests (Keras 3: ["mse", ["mse", "accuracy"]])
        per = per_output(list(metrics), names, "compile(metrics=...)")
    else:  # one metric or one list of them: for every output, as tf.keras
        per = [metrics] * len(names)
    out = []
    for index, spec in enumerate(per):
        specs = [] if spec is None else spec if isinstance(spec, (list, tuple)) else [spec]
        for s in specs:
            out.append(OutputMetric(as_metric(s), names, index))
    return out
