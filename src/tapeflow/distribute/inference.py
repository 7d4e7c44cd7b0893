"""``evaluate`` and ``predict`` of a model under an ``MPIStrategy``: each rank takes its shard.

Each rank evaluates (or predicts) one contiguous shard of the rows; evaluate's metric state is
then summed over the ranks (one Allreduce), so every rank returns the values of the whole data,
as one process's ``model.evaluate`` would; predict's outputs are gathered in rank order, so
every rank returns all rows.  ``Model.evaluate`` / ``predict`` come here when ``takes`` says
so: an MPIStrategy of several ranks, and arrays (a dataset or generator is read whole by each
rank, as Keras's without a distributed dataset).  With fewer rows than ranks every rank does
all of them.
"""
import threading

import numpy as np

from ..core import nest
from ..models import batching as data_module
from ..models import feeds
from ..models.model import _as_returned
from .mpi import host_array
from .training import metric_logs, metric_variables

__all__ = ["takes", "evaluate", "predict"]

_LOCAL = threading.local()  # .model: the model evaluating or predicting its own shard now


def takes(strategy, model, x, steps=None):
    """True when ``model.evaluate`` / ``predict`` on ``x`` should go over the ranks' shards."""
    if getattr(_LOCAL, "model", None) is model or steps is not None or feeds.is_batch_source(x):
        return False
    return strategy.num_replicas_in_sync > 1 and x is not None


class _OnShard:
    """While a rank runs ``model``'s evaluate / predict on its shard, ``takes`` says no."""

    def __init__(self, model):
        self.model = model

    def __enter__(self):
        self.previous, _LOCAL.model = getattr(_LOCAL, "model", None), self.model

    def __exit__(self, *exc):
        _LOCAL.model = self.previous


def evaluate(strategy, model, x, y=None, batch_size=None, sample_weight=None,
             return_dict=False):
    """``model.evaluate(x, y, ...)`` over every rank's shard; the same result on every rank."""
    rows = data_module.num_samples(x)
    whole = dict(batch_size=batch_size, verbose=0, return_dict=True)
    if not _sharded(strategy, rows):
        with _OnShard(model):
            return _as_returned(model.evaluate(x, y, sample_weight=sample_weight, **whole),
                                return_dict)
    start, stop = _shard(strategy, rows)
    model.reset_metrics()
    before = [host_array(v) for v in metric_variables(model)]
    x, y, sample_weight = (_rows(part, start, stop) for part in (x, y, sample_weight))
    with _OnShard(model):
        local = model.evaluate(x, y, sample_weight=sample_weight, **whole)
    return _as_returned(metric_logs(strategy, model, local, before), return_dict)


def predict(strategy, model, x, batch_size=None):
    """``model.predict(x)`` over every rank's shard; every row's outputs on every rank."""
    rows = data_module.num_samples(x)
    with _OnShard(model):
        if not _sharded(strategy, rows):
            return model.predict(x, batch_size=batch_size, verbose=0)
        start, stop = _shard(strategy, rows)
        mine = model.predict(_rows(x, start, stop), batch_size=batch_size, verbose=0)
    every = strategy._comm.gather_objects(mine)
    flat = [nest.flatten(outputs) for outputs in every]
    return nest.pack_sequence_as(every[0], [np.concatenate(parts) for parts in zip(*flat)])


def _sharded(strategy, rows):
    return strategy is not None and 1 < strategy.num_replicas_in_sync <= rows


def _shard(strategy, rows):
    size, rank = strategy.num_replicas_in_sync, strategy.rank
    return rank * rows // size, (rank + 1) * rows // size


def _rows(part, start, stop):
    return None if part is None else data_module.map_arrays(lambda a: a[start:stop], part)
