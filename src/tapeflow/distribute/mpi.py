"""The MPI communicator data-parallel training runs on (mpi4py), and what a rank does on error.

mpi4py is imported only when a communicator is made, so ``import tapeflow`` works without it;
without it, the error says how to install it.  Gradients, metrics and weights travel as one flat
numpy buffer per call (ChainerMN's scheme: one collective per step, not one per variable).
"""
import atexit
import os
import socket
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np

from .. import backend
from . import watch

__all__ = ["INSTALL_HINT", "Communicator", "host_array", "import_mpi", "oversubscription"]

INSTALL_HINT = "pip install 'tapeflow[distributed]'"
_OUTPUT_GRACE_S = 0.5  # between an error's message and MPI_Abort


def import_mpi():
    """mpi4py's ``MPI`` module, or an ImportError saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as error:
        raise ImportError(
            f"tf.distribute.MPIStrategy needs mpi4py and an MPI library, which are not "
            f"installed: {INSTALL_HINT} (mpi4py and the MPICH wheel), then launch with "
            f"mpiexec -n N python your_script.py") from error
    return MPI


class Communicator:
    """A thin wrapper of an mpi4py communicator (``COMM_WORLD`` unless one is given)."""

    def __init__(self, comm=None):
        self._mpi = import_mpi()
        self.comm = comm if comm is not None else self._mpi.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.local_rank = 0  # this rank's index among the ranks on its machine
        if self.size > 1:
            local = self.comm.Split_type(self._mpi.COMM_TYPE_SHARED)
            self.local_rank = local.Get_rank()
            local.Free()

    def sum_in_place(self, buffer):
        """Sum a contiguous numpy buffer over the ranks, in place (one ``Allreduce``)."""
        if self.size > 1:
            self.comm.Allreduce(self._mpi.IN_PLACE, buffer, op=self._mpi.SUM)
        return buffer

    def broadcast_buffer(self, buffer, root=0):
        """Overwrite a contiguous numpy buffer on every rank with ``root``'s (one ``Bcast``)."""
        if self.size > 1:
            self.comm.Bcast(buffer, root=root)
        return buffer

    def broadcast_object(self, value, root=0):
        return self.comm.bcast(value, root=root) if self.size > 1 else value

    def gather_objects(self, value):
        """Every rank's ``value``, in rank order, on every rank."""
        return self.comm.allgather(value) if self.size > 1 else [value]

    def warn_if_oversubscribed(self):
        """Warn (rank 0, once) when this machine's ranks times their BLAS threads exceed its
        cores: the ranks then fight over the cores, and MPI's busy-waiting makes it far worse
        (measured: 2 ranks x 2 OpenBLAS threads on 2 cores ran 20-40x slower than with 1 thread
        each, benchmarks/bench_mpi.py)."""
        if self.size < 2:
            return
        local = self.comm.Split_type(self._mpi.COMM_TYPE_SHARED)
        message = oversubscription(local.Get_size(), _blas_threads(), os.cpu_count() or 1)
        local.Free()
        if message and self.rank == 0:
            warnings.warn(message, RuntimeWarning, stacklevel=3)

    def abort_on_error(self):
        """Make an uncaught exception on this rank abort every rank, with a message naming it.

        Without this a rank that raises leaves the others waiting forever in their next
        collective; ``MPI_Abort`` ends them all (mpiexec exits nonzero).
        """
        if self.size < 2 or getattr(sys.excepthook, "_tapeflow_rank", None) is not None:
            return
        previous = sys.excepthook
        rank, size = self.rank, self.size

        def abort_all_ranks(kind, value, traceback):
            sys.stderr.write(f"tapeflow.distribute: rank {rank} of {size} raised "
                             f"{kind.__name__}; aborting all ranks\n")
            previous(kind, value, traceback)
            self.abort("", code=1)
        abort_all_ranks._tapeflow_rank = rank
        sys.excepthook = abort_all_ranks

    def abort(self, message, code):
        """Write ``message`` to stderr and end every rank with exit status ``code``."""
        watch.tell(_watch_fd[0] if _watch_fd else None, watch.ENDING)  # no "lost" report
        # the message first, and a moment for mpiexec to pass it on: Abort kills the
        # processes that forward output, and what they hold then is lost
        sys.stderr.write(message)
        sys.stderr.flush()
        time.sleep(_OUTPUT_GRACE_S)
        self.comm.Abort(code)

    def watch_ranks(self):
        """Have a rank that is killed named (``distribute.watch``): the lowest rank of each
        host starts the host's watcher; every rank holds its FIFO open and says when it exits
        normally.  Once per process, whatever number of strategies it makes."""
        if self.size < 2 or _watch_fd:
            return
        host = socket.gethostname()
        local = {rank: pid for rank, pid, on in self.gather_objects((self.rank, os.getpid(), host))
                 if on == host}
        directory = _start_watcher(local, self.size, host) if self.rank == min(local) else None
        directory = self.gather_objects(directory)[min(local)]
        _watch_fd.append(None if directory is None else watch.open_for_rank(directory, self.rank))
        atexit.register(watch.tell, _watch_fd[0], watch.FINISHED)


_watch_fd = []  # this process's end of its watcher's FIFO, once the watch is started


def _start_watcher(local, size, host):
    """Start the watcher of this host's ranks ``local`` ({rank: pid}); its directory, or None
    (with a warning) where it cannot be started: the run goes on unwatched."""
    try:
        directory = tempfile.mkdtemp(prefix="tapeflow-mpi-watch-")
        watch.make_fifos(directory, local)
        subprocess.Popen([sys.executable, watch.__file__, directory, str(size), host,
                          *(f"{rank}:{pid}" for rank, pid in sorted(local.items()))],
                         stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                         start_new_session=True)
    except OSError as e:
        warnings.warn(f"MPIStrategy: no watch of the ranks on {host} ({e}); a rank that is "
                      f"killed will not be named", RuntimeWarning, stacklevel=3)
        return None
    return directory


def oversubscription(local_ranks, threads, cores):
    """The warning for ``local_ranks`` processes of ``threads`` threads on ``cores``, or None."""
    if local_ranks * threads <= cores:
        return None
    fit = max(1, cores // local_ranks)
    return (f"MPIStrategy: {local_ranks} ranks x {threads} BLAS threads on {cores} cores; "
            f"launch with OMP_NUM_THREADS={fit} OPENBLAS_NUM_THREADS={fit} (mpiexec passes "
            f"them on), or the ranks slow each other down many times over")


def _blas_threads():
    from threadpoolctl import threadpool_info  # here: only MPI runs ask
    return max((pool["num_threads"] for pool in threadpool_info()), default=1)


def host_array(value):
    """A numpy array of a tensor, variable or array (device arrays copied to the host)."""
    value = value.numpy() if hasattr(value, "numpy") else value
    return np.asarray(backend.to_host(value))
