"""What ``Model.fit`` does differently under an ``MPIStrategy``: how the strategy wraps it
(``tapeflow.replication`` calls in here; models never import this module).

- ``fit_callbacks`` (fit's start): rank 0's random state goes to every rank, so all draw the
  same shuffles; ranks other than 0 print nothing and drop the callbacks that write files.
- ``train_function``: each global batch is cut into one contiguous shard per rank; the step is
  traced as on one process (eager where the model runs eagerly); the metrics' state is summed
  so that every rank logs the global batch's values, and BatchNormalization's moving statistics
  are averaged.  The first step checks the ranks agree and broadcasts rank 0's weights.
- ``reduce_gradients`` (inside ``Optimizer.apply``: ``train_function`` wraps the model's
  optimizer, as ChainerMN's multi-node optimizer): each rank's gradient of the mean loss over its
  shard, weighted by its shard's share of the global batch, summed in one Allreduce: the
  gradient of the mean loss over the global batch, whatever the number of ranks.  In a traced
  step the gradients are packed into one flat buffer by graph ops and the Allreduce is an op of
  the graph (``MPIAllReduceSum``), so the whole step runs compiled.
"""
import hashlib

import numpy as np

from .. import callbacks as callbacks_module
from .. import replication
from ..core.context import PER_THREAD, context
from ..core.dispatch import apply
from ..core.registry import def_primitive
from ..core.tensor import convert_to_tensor
from ..models import batching as data_module
from ..ops.creation import ones_like
from ..ops.shape import cast, concat, reshape
from ..tracing.function import function
from .mpi import host_array

__all__ = ["fit_callbacks", "metric_logs", "metric_variables", "reduce_gradients",
           "train_function"]

# Callbacks that write files: rank 0's alone, so that N ranks don't write the same file at once.
_WRITERS = (callbacks_module.ModelCheckpoint, callbacks_module.CSVLogger,
            callbacks_module.TensorBoard, callbacks_module.ProgbarLogger)


def fit_callbacks(strategy, model, callbacks, verbose):
    """``(callbacks, verbose)`` for this rank's ``fit``."""
    strategy.sync_random_state()
    if strategy.rank == 0:
        return callbacks, verbose
    return [cb for cb in callbacks or [] if not isinstance(cb, _WRITERS)], 0


def train_function(strategy, model, step):
    """``step`` (fit's train function), or the data-parallel step under ``strategy``."""
    if strategy.num_replicas_in_sync == 1:
        return step  # one rank: fit's own (traced) step, with nothing to reduce
    if getattr(model.optimizer, "needs_loss_fn", False):
        raise ValueError(f"MPIStrategy: {type(model.optimizer).__name__} evaluates the loss "
                         f"itself and cannot train data-parallel; use a first-order optimizer")
    replication.distribute_optimizer(model.optimizer, strategy)  # it sums the gradients
    replica = getattr(model, "_replica_step", None)
    # one per compiled step (compile makes a new one), so later fits reuse its traces
    if replica is None or replica.strategy is not strategy or replica.source is not step:
        replica = model._replica_step = _ReplicaStep(strategy, model, step)
    return replica


def reduce_gradients(strategy, grads):
    """The gradients of the global batch's mean loss, on every rank (unchanged on one rank).
    Outside fit (``train_on_batch``) every rank's batch counts the same."""
    if strategy.num_replicas_in_sync == 1:
        return grads
    share = getattr(strategy, "_shard_share", None)  # this rank's rows / the global batch's
    if context().trace is not None:
        if share is None:
            raise RuntimeError("MPIStrategy: gradients are all-reduced inside fit's and "
                               "train_on_batch's steps; a tf.function of your own cannot "
                               "all-reduce them yet (call strategy.all_reduce outside it)")
        return _traced_sum(strategy, grads, share)
    local, total = (1, strategy.num_replicas_in_sync) if share is None else share
    return strategy._packed_sum(grads, before=float(local), after=1.0 / total)


def _all_reduce_kernel(buffer, weight, *, strategy):
    """``sum over ranks of weight * buffer`` (one Allreduce; NCCL for device data).  While a
    trace records the op its operands are examples: no rank communicates then, so ranks that
    trace at different steps (another shard shape) never wait for each other."""
    weighted = buffer * weight.astype(buffer.dtype)
    if PER_THREAD.context.trace is not None:
        return weighted
    return strategy._packed_sum([weighted], before=1.0, after=1.0)[0]._value


# stateful: a trace never merges or drops it (each step's Allreduce is one collective call)
MPI_ALL_REDUCE = def_primitive("MPIAllReduceSum", _all_reduce_kernel, stateful=True,
                               not_differentiable=True)


def _traced_sum(strategy, grads, share):
    """``sum over ranks of share * g`` for each of ``grads`` (None stays None), by graph ops:
    packed into one buffer of their common dtype, all-reduced, cut back to their dtypes."""
    present = [g for g in grads if g is not None]
    if not present:
        return grads
    dtype = np.result_type(*[g.dtype.as_numpy_dtype for g in present])
    flat = concat([reshape(cast(g, dtype), [-1]) for g in present], axis=0)
    summed = apply(MPI_ALL_REDUCE, (flat, cast(share, dtype)), {"strategy": strategy})
    out, start = [], 0
    for g in grads:
        if g is None:
            out.append(None)
            continue
        size = int(np.prod(g.shape))
        out.append(cast(reshape(summed[start:start + size], g.shape), g.dtype))
        start += size
    return out


class _ReplicaStep:
    """fit's train function on one rank: its shard of each global batch, then the sums."""

    def __init__(self, strategy, model, source):
        self.strategy, self.model, self.source = strategy, model, source
        self.weights_shared = False
        # traced as on one process, with the shard's share of the global batch an input
        self.traced = None if model._runs_eagerly("train") else function(self._traced_step)

    def _shard_step(self, shard, share):
        """train_step on a shard; ``reduce_gradients`` reads its share (rows / global rows)
        from the strategy: a traced scalar here, ``(rows, global rows)`` eagerly."""
        self.strategy._shard_share = share
        try:
            return self.model.train_step(shard)
        finally:
            self.strategy._shard_share = None

    def _traced_step(self, shard, share, counts):
        """The whole replica step as one graph: ``train_step`` on the shard (its gradients
        summed inside), then what ``_sync_state`` does eagerly, with a second all-reduce op:
        the metrics' updates (times ``counts``: 0 on a rank with no rows) and the layers'
        floating state (times ``share``) summed over the ranks.  No host reads."""
        model = self.model
        metric_vars = metric_variables(model)
        before = [v.value() for v in metric_vars]
        logs = self._shard_step(shard, share)
        if len(metric_variables(model)) != len(metric_vars):  # fit's _build_on makes them first
            raise RuntimeError("MPIStrategy: a metric made its state inside the traced step, "
                               "where its updates would not be summed over the ranks")
        layer_state = [v for v in model.non_trainable_variables if v.dtype.is_floating]
        if not metric_vars and not layer_state:
            return logs
        changes = [(v.value() - b) * cast(counts, v.dtype) for v, b in zip(metric_vars, before)]
        # in float64, where shares summing to 1 give back a constant (Normalization's
        # statistics) exactly; in float32 uneven shards could move it an ulp per step
        changes += [cast(v.value(), np.float64) * share for v in layer_state]
        summed = _traced_sum(self.strategy, changes, ones_like(share))
        for v, b, change in zip(metric_vars, before, summed):
            v.assign(b + change)
        for v, value in zip(layer_state, summed[len(metric_vars):]):
            v.assign(cast(value, v.dtype))
        return _logs_of_metrics(model, logs)

    def __call__(self, batch):
        strategy, model = self.strategy, self.model
        if not self.weights_shared:  # fit built the model on the first batch just before
            _refuse_differing_ranks(strategy, model, batch)
            strategy.broadcast_variables(model.weights)
            self.weights_shared = True
        total = _batch_length(batch)
        size, rank = strategy.num_replicas_in_sync, strategy.rank
        lo, hi = rank * total // size, (rank + 1) * total // size
        # A batch shorter than the number of ranks leaves some ranks no rows: they run the step
        # on one row weighted 0 (so they join the Allreduce) and keep no metric update from it.
        shard = _rows(batch, *((lo, hi) if hi > lo else (0, 1)))
        if self.traced is not None:
            return self.traced(shard, convert_to_tensor(np.float64((hi - lo) / total)),
                               convert_to_tensor(np.float64(hi > lo)))
        before = [_host(v) for v in metric_variables(model)]
        local_logs = self._shard_step(shard, (hi - lo, total))
        return _sync_state(strategy, model, local_logs, before, hi - lo, total)


def _refuse_differing_ranks(strategy, model, batch):
    """Refuse to start when a rank's model or data differ from rank 0's: it would train another
    problem, or wait forever in a collective the others never reach (a different step count).
    The first global batch stands for the data: the ranks draw the same shuffle, so different
    data (or a different number of rows) give a different first batch."""
    # shapes, not names: layer names count the layers made in each process
    mine = {"model's weight shapes": [tuple(w.shape) for w in model.weights],
            "optimizer": type(model.optimizer).__name__,
            "first global batch": _digest(batch)}
    every = strategy._comm.gather_objects(mine)
    for rank, theirs in enumerate(every[1:], start=1):
        differing = [what for what in mine if theirs[what] != every[0][what]]
        if differing:
            verb = "differs" if len(differing) == 1 else "differ"
            raise ValueError(f"MPIStrategy: rank {rank}'s {' and '.join(differing)} {verb} from "
                             f"rank 0's; every rank must fit the same model on the same data")


def _digest(batch):
    digest = hashlib.sha256()
    for part in batch if isinstance(batch, tuple) else (batch,):
        if part is not None:
            for array in (part.values() if isinstance(part, dict) else
                          part if isinstance(part, (list, tuple)) else (part,)):
                digest.update(np.ascontiguousarray(host_array(array)).tobytes())
    return digest.hexdigest()


def _sync_state(strategy, model, local_logs, before, rows, total):
    """One Allreduce for the state the step changed outside the gradients; the logs it gives.

    Metrics: every rank's update summed into every rank's metrics, which then hold the global
    batches' state.  Layers' floating non-trainable weights (BatchNormalization's moving
    statistics): averaged, weighted by rows, so the ranks stay identical; the moving mean is
    then the global batch's, the moving variance the rows-weighted mean of the shards' ones
    (each rank normalizes with its own shard's statistics, as Horovod's BatchNormalization does).
    """
    metric_vars = metric_variables(model)
    layer_state = [v for v in model.non_trainable_variables if v.dtype.is_floating]
    if not metric_vars and not layer_state:
        return local_logs
    deltas = [_host(v) - b if rows else np.zeros_like(b) for v, b in zip(metric_vars, before)]
    shares = [_host(v).astype(np.float64) * (rows / total) for v in layer_state]  # as traced
    summed = strategy._packed_sum(deltas + shares, before=1.0, after=1.0)
    for v, b, d in zip(metric_vars, before, summed):
        v.assign(b + d.numpy())
    for v, value in zip(layer_state, summed[len(metric_vars):]):
        v.assign(value.numpy())
    return _logs_of_metrics(model, local_logs)


def metric_logs(strategy, model, local_logs, before):
    """Every rank's metric updates since ``before`` (the values of the metric variables) summed
    into every rank's metrics (one Allreduce); ``local_logs`` with the metrics' new results."""
    metric_vars = metric_variables(model)
    deltas = [_host(v) - b for v, b in zip(metric_vars, before)]
    for v, b, d in zip(metric_vars, before, strategy._packed_sum(deltas, before=1.0, after=1.0)):
        v.assign(b + d.numpy())
    return _logs_of_metrics(model, local_logs)


def _logs_of_metrics(model, local_logs):
    """``local_logs`` with each metric's (or loss tracker's) value read from the metric."""
    by_name = {m.name: m for m in model.metrics}
    by_name.update(dict(model._named_metrics()))
    return {k: by_name[k].result() if k in by_name else v for k, v in local_logs.items()}


def metric_variables(model):
    return [v for m in model.metrics for v in m.variables]


def _host(variable):
    return host_array(variable)


def _batch_length(batch):
    x = batch[0] if isinstance(batch, (tuple, list)) else batch
    return data_module.num_samples(x)


def _rows(batch, start, stop):
    """Rows ``start:stop`` of every array in ``batch`` ((x, y, weights) or x alone)."""
    def cut(part):
        return None if part is None else data_module.map_arrays(lambda a: a[start:stop], part)
    return tuple(cut(p) for p in batch) if isinstance(batch, tuple) else cut(batch)
