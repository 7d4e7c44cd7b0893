"""compile() for a model of several outputs: a loss (and metrics) per output, as Keras's.

``loss`` is one loss for every output, a list (one per output, in
``model.outputs`` order) or a dict keyed by output name (an output it leaves
out has no loss); ``loss_weights`` likewise (1.0 where not given).  The total
is the weighted sum of the outputs' losses; each is also logged as
``<output name>_loss``.  ``metrics`` is one list for every output, a list of
lists (one per output) or a dict {output name: metric or list}; each is logged
as ``<output name>_<metric name>``.  ``y`` and ``sample_weight`` are a list in
output order or a dict keyed by output name (one ``sample_weight`` array
weights every output).
"""
from .. import metrics as metrics_module

__all__ = ["OutputLosses", "OutputMetric", "output_metrics", "per_output"]


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


def _numbers(value):
    while isinstance(value, (list, tuple)) and value:
        value = value[0]
    return isinstance(value, (int, float))


class OutputLosses:
    """The compiled loss of a model of several outputs: ``sum_i w_i loss_i(y_i, y_pred_i)``."""

    def __init__(self, loss, loss_weights, names, as_loss):
        self.names = list(names)
        specs = per_output(loss, self.names, "compile(loss=...)", broadcast=True)
        self.losses = [None if s is None else as_loss(s) for s in specs]
        if all(l is None for l in self.losses):
            raise ValueError(f"compile(loss=...): no output of {self.names} has a loss")
        weights = per_output(loss_weights, self.names, "compile(loss_weights=...)",
                             broadcast=True) if loss_weights is not None else [1.0] * len(names)
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
        total = None
        for name, value in self.per_output(y, y_pred, sample_weight):
            term = value * weight_of[name] if weight_of[name] != 1.0 else value
            total = term if total is None else total + term
        return total

    def config(self, loss_config):
        """What a save writes: each output's loss by ``loss_config``, and the weights."""
        return {"output_losses": {n: None if l is None else loss_config(l)
                                  for n, l in zip(self.names, self.losses)},
                "loss_weights": dict(zip(self.names, self.weights))}


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
            all(m is None or isinstance(m, (list, tuple)) for m in metrics):
        per = per_output(list(metrics), names, "compile(metrics=...)")
    else:  # one metric or one list of them: for every output, as tf.keras
        per = [metrics] * len(names)
    out = []
    for index, spec in enumerate(per):
        specs = [] if spec is None else spec if isinstance(spec, (list, tuple)) else [spec]
        for s in specs:
            out.append(OutputMetric(as_metric(s), names, index))
    return out
