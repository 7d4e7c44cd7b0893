"""The trainer under ``mpiexec``: is this process one of several ranks, and the ranks agreeing.

``launched_ranks`` reads only the environment the MPI launcher sets, so a plain run never
imports mpi4py.  ``together`` runs one set-up step on every rank and turns an error on any rank
into the same error on every rank (rank 0 prints it), so that no rank goes on to a collective
the others never reach.
"""
import contextlib
import os

__all__ = ["broadcast", "device_name", "gather", "launched_ranks", "scope", "together",
           "trainer_strategy"]

# The world size each launcher puts in its ranks' environment: MPICH/Intel MPI (Hydra),
# Open MPI, PMIx launchers (Slurm's srun --mpi=pmix, prterun), MVAPICH.
_SIZE_VARIABLES = ("PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_SIZE", "MV2_COMM_WORLD_SIZE")


def launched_ranks(environ=None):
    """How many ranks the MPI launcher started this process among (1 outside ``mpiexec``)."""
    environ = os.environ if environ is None else environ
    for name in _SIZE_VARIABLES:
        try:
            return max(1, int(environ[name]))
        except (KeyError, ValueError):
            continue
    return 1


def trainer_strategy(error):
    """An ``MPIStrategy`` when launched on more than one rank, else None; ``error`` (a class)
    is raised, with the install hint, when mpiexec started several ranks without mpi4py."""
    if launched_ranks() < 2:
        return None
    from .strategy import MPIStrategy  # imports mpi4py: only under mpiexec
    try:
        return MPIStrategy()
    except ImportError as e:
        raise error(f"launched on {launched_ranks()} MPI ranks, but {e}") from None


def device_name(strategy, device):
    """The ``tf.device`` name of a run's ``device`` ("cpu" or "gpu") on this rank: under MPI
    each rank of a machine takes its own GPU (``MPIStrategy.gpu_device_name``)."""
    if device != "gpu":
        return "/CPU:0"
    return "/GPU:0" if strategy is None else strategy.gpu_device_name()


def scope(strategy):
    """``strategy.scope()``, or nothing to enter without a strategy."""
    return contextlib.nullcontext() if strategy is None else strategy.scope()


def broadcast(strategy, value):
    """Rank 0's ``value`` on every rank (``value`` itself without a strategy)."""
    return value if strategy is None else strategy._comm.broadcast_object(value)


def gather(strategy, value):
    """Every rank's ``value``, in rank order ([value] without a strategy)."""
    return [value] if strategy is None else strategy._comm.gather_objects(value)


def together(strategy, catch, step, *args):
    """``step(*args)`` on every rank; an error of class ``catch`` on any rank is raised on
    every rank (this rank's own, else one naming the first rank that raised), marked
    ``agreed`` and, on ranks other than 0, ``quiet``: rank 0 alone prints it."""
    if strategy is None:
        return step(*args)
    error, result = None, None
    try:
        result = step(*args)
    except catch as e:
        error = e
    failed = [(rank, message) for rank, message in
              enumerate(gather(strategy, None if error is None else str(error)))
              if message is not None]
    if not failed:
        return result
    if error is None:
        rank, message = failed[0]
        error = catch(f"rank {rank}: {message}")
    error.agreed, error.quiet = True, strategy.rank != 0
    raise error


@contextlib.contextmanager
def one_message(strategy, catch, prefix):
    """Let an agreed error of class ``catch`` through; one that only this rank raised (the
    others would wait for it forever) is printed, naming the rank, and aborts every rank."""
    try:
        yield
    except catch as e:
        if strategy is None or getattr(e, "agreed", False):
            raise
        strategy._comm.abort(f"{prefix}rank {strategy.rank}: {e}\n", code=2)
