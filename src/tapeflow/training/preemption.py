"""Stopping a run when the scheduler asks: SIGTERM, which batch schedulers (Slurm, Kubernetes,
preemptible cloud VMs) send some seconds before they kill a job.

While ``train`` runs, a SIGTERM only sets a flag; the trainer finishes the step it is in,
writes a checkpoint and raises ``Preempted``, and ``tapeflow train`` exits with
``PREEMPTED_STATUS``.  Under MPI the ranks must stop at the same step: they agree on the
flag (one small collective) only at ``checkpoint.every_steps`` boundaries and at epoch ends,
never at every step.
"""
import contextlib
import signal
import threading

from ..distribute import launch

__all__ = ["PREEMPTED_STATUS", "StopRequest", "sigterm_requests", "agreed"]

# sysexits.h's EX_TEMPFAIL ("a temporary failure; try again later"): a checkpoint was written
# and rerunning the command with --resume goes on.  Not 143 (128 + SIGTERM), which is what a
# process killed by SIGTERM before it could write a checkpoint reports.
PREEMPTED_STATUS = 75


class StopRequest:
    """Whether a stop was asked for (the signal's number, else None)."""

    def __init__(self):
        self.signal = None

    @property
    def requested(self):
        return self.signal is not None


@contextlib.contextmanager
def sigterm_requests():
    """A ``StopRequest`` that SIGTERM sets while the block runs; the previous handler is put
    back after.  Python lets only the main thread install handlers: in another thread the
    request is never set and SIGTERM does what it did before."""
    request = StopRequest()
    if threading.current_thread() is not threading.main_thread():
        yield request
        return

    def handler(signum, frame):
        request.signal = signum

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield request
    finally:
        signal.signal(signal.SIGTERM, previous)


def agreed(strategy, request):
    """Whether any rank was asked to stop (one collective under MPI: every rank must call it
    at the same step); this process's request alone without a strategy."""
    if strategy is None:
        return request.requested
    return any(launch.gather(strategy, request.requested))
