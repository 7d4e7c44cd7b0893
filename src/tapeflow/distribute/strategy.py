"""``tf.distribute.MPIStrategy``: data-parallel training over MPI ranks, in TensorFlow's names.

Every rank holds the whole model.  ``reduce`` and ``all_reduce`` are the collectives a custom
loop needs; ``model.fit`` inside ``scope()`` (or on a model compiled inside it) shards each
global batch over the ranks and sums the gradients (``distribute.training``).
"""
import contextlib

import numpy as np

from .. import backend
from ..core.tensor import Tensor
from ..ops import random as random_ops
from .. import replication
from . import inference, nccl as nccl_module, training
from .mpi import Communicator, host_array

__all__ = ["MPIStrategy", "current_strategy"]

current_strategy = replication.current  # the strategy of the innermost open scope(), or None


class MPIStrategy:
    """Synchronous data parallelism on MPI: one replica per rank of ``comm`` (``COMM_WORLD``).

    Launch with ``mpiexec -n N python script.py``.  An uncaught exception on any rank aborts
    every rank, naming the one that raised, rather than leaving the others waiting; a rank that
    is killed is named by its host's watcher (``distribute.watch``).
    """

    def __init__(self, comm=None):
        self._comm = Communicator(comm)
        self._comm.abort_on_error()
        self._comm.watch_ranks()
        self._comm.warn_if_oversubscribed()
        self._nccl = None  # made at the first all-reduce of device arrays
        self.sync_random_state()

    @property
    def num_replicas_in_sync(self):
        return self._comm.size

    @property
    def rank(self):
        """This process's replica index (0 is the one that writes files and logs)."""
        return self._comm.rank

    @property
    def local_rank(self):
        """This process's index among the ranks on its machine (Horovod's ``local_rank``):
        rank r of a machine with g GPUs uses GPU r % g (``gpu_device_name``)."""
        return self._comm.local_rank

    def gpu_device_name(self):
        """The GPU this rank trains on: ``"/GPU:<local_rank % GPUs on this machine>"``, so the
        ranks of one machine spread over its GPUs (several share one when ranks outnumber them)."""
        from .. import backend
        return f"/GPU:{self.local_rank % max(1, backend.gpu_count())}"

    @contextlib.contextmanager
    def scope(self):
        """Models compiled and fitted inside train data-parallel on this strategy."""
        replication.enter(self)
        try:
            yield self
        finally:
            replication.leave(self)

    # --- how it wraps a model (tapeflow.replication calls these) ---------------------------------
    def fit_callbacks(self, model, callbacks, verbose):
        return training.fit_callbacks(self, model, callbacks, verbose)

    def train_function(self, model, step):
        return training.train_function(self, model, step)

    def sum_gradients(self, grads):
        return training.reduce_gradients(self, grads)

    def shards_inference(self, model, x, steps):
        return inference.takes(self, model, x, steps)

    def evaluate(self, model, x, y=None, batch_size=None, sample_weight=None, return_dict=False):
        return inference.evaluate(self, model, x, y, batch_size, sample_weight, return_dict)

    def predict(self, model, x, batch_size=None):
        return inference.predict(self, model, x, batch_size)

    def reduce(self, reduce_op, value, axis=None):
        """``value`` summed ("SUM") or averaged ("MEAN") over the replicas (and over ``axis``
        of each replica's value first, as TensorFlow's ``Strategy.reduce`` does)."""
        op = _reduce_op(reduce_op)
        array = host_array(value)
        if axis is None:
            local, count = array, 1
        else:
            local, count = array.sum(axis=axis), np.prod([array.shape[a] for a in
                                                          np.atleast_1d(axis)])
        buffer = np.append(np.ravel(local).astype(np.float64), float(count))
        self._comm.sum_in_place(buffer)
        total, count = buffer[:-1].reshape(np.shape(local)), buffer[-1]
        result = total / count if op == "MEAN" else total
        return Tensor(np.asarray(result, dtype=array.dtype))

    def all_reduce(self, values, reduce_op="MEAN"):
        """A list of tensors (gradients) summed or averaged over the replicas: packed into one
        flat buffer, one ``Allreduce``, then scaled and unpacked.  ``None`` entries stay None."""
        scale = 1.0 / self._comm.size if _reduce_op(reduce_op) == "MEAN" else 1.0
        return self._packed_sum(values, before=1.0, after=scale)

    def broadcast_variables(self, variables, root=0):
        """Give every rank ``root``'s values of ``variables`` (one ``Bcast``)."""
        variables = list(variables)
        if not variables or self._comm.size < 2:
            return
        arrays = [host_array(v) for v in variables]
        buffer = np.concatenate([a.ravel().astype(np.float64) for a in arrays])
        self._comm.broadcast_buffer(buffer, root=root)
        for v, a, part in zip(variables, arrays, _split(buffer, arrays)):
            v.assign(part.reshape(a.shape).astype(a.dtype))

    def sync_random_state(self, root=0):
        """Give every rank ``root``'s random state: the same initial weights and shuffles."""
        state = random_ops.snapshot_state() if self._comm.rank == root else None
        random_ops.restore_state(self._comm.broadcast_object(state, root=root))

    def _packed_sum(self, values, before, after):
        """``after * sum over ranks of (before * value)`` for each value, in one all-reduce:
        MPI's on host arrays, NCCL's where they are on a GPU (they stay there)."""
        present = [(i, _data(v)) for i, v in enumerate(values) if v is not None]
        if not present:
            return list(values)
        arrays = [a for _, a in present]
        xp = backend.array_module(*arrays)
        arrays = [xp.asarray(a) for a in arrays]  # host scalars beside device arrays go there
        dtype = np.result_type(*[a.dtype for a in arrays])
        buffer = xp.concatenate([a.ravel() for a in arrays]).astype(dtype, copy=False)
        if before != 1.0:
            buffer *= dtype.type(before)
        self._summer(xp).sum_in_place(buffer)
        if after != 1.0:
            buffer *= dtype.type(after)
        out = list(values)
        for (i, a), part in zip(present, _split(buffer, arrays)):
            out[i] = Tensor(part.reshape(a.shape).astype(a.dtype, copy=False))
        return out


    def _summer(self, xp):
        """What sums a buffer of array module ``xp``: MPI for numpy, else NCCL."""
        if xp is np:
            return self._comm
        if self._nccl is None:
            self._nccl = nccl_module.NcclSum(self._comm, nccl_module.import_nccl())
        return self._nccl


def _data(value):
    """The array of a tensor, variable or array, where it lives (host or device)."""
    if isinstance(value, Tensor):
        return value._value
    return value if backend.is_array(value) else np.asarray(value)


def _split(buffer, arrays):
    """``buffer`` cut back into pieces of the sizes of ``arrays``."""
    ends = np.cumsum([a.size for a in arrays])
    return [buffer[end - a.size:end] for a, end in zip(arrays, ends)]


def _reduce_op(reduce_op):
    name = str(getattr(reduce_op, "name", reduce_op)).upper()
    if name not in ("SUM", "MEAN"):
        raise ValueError(f"MPIStrategy: reduce_op must be 'SUM' or 'MEAN', got {reduce_op!r}")
    return name
