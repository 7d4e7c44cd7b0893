"""A death watch over one host's ranks: name the rank that was lost when one is killed.

When one rank of an ``mpiexec`` run is killed (SIGKILL, the kernel's OOM killer), MPICH's Hydra
SIGKILLs the other ranks at once (measured with MPICH 5.0.2: no SIGTERM first, and the
collective they wait in returns no error), so no rank lives to say which one went, and
mpiexec's report names a pid, at times a survivor's.  So the lowest rank on each host starts
this watcher, a process of its own session (Hydra's cleanup does not reach it).  Every rank of
the host holds the write end of a FIFO the watcher reads; the kernel closes it the moment the
rank dies, as it closes the rank's socket to Hydra, so the watcher learns of the death as early
as Hydra does, before Hydra's cleanup ends the others (pidfds come too late: a killed process
with threads is reported only after its memory is torn down).  A rank that ends without having
written ``finished`` (at its interpreter's exit) was lost: the watcher prints which rank it
was and, should the others still run after a grace period (``mpiexec -disable-auto-cleanup``
leaves them waiting forever in their next collective), ends them, so a lost rank never leaves
a hang.  A rank that aborts the run on purpose writes ``ending``: it names itself, and the
watcher stays quiet.  Should the watcher not run between the death and Hydra's cleanup (a
loaded machine), it sees several ranks end at once and cannot tell which was lost: it says so,
naming them all, rather than naming a survivor as the lost one.

Standard library only, and run as a script (``python watch.py DIR SIZE HOST RANK:PID...``):
no tapeflow import, so it starts in milliseconds.
"""
import errno
import os
import select
import shutil
import signal
import sys
import time

GRACE_S = 5.0  # for the launcher to end the other ranks before the watcher does
OPEN_TIMEOUT_S = 30.0  # for the watcher to start and open the FIFOs
FINISHED, ENDING = b"finished\n", b"ending\n"


def fifo_path(directory, rank):
    return os.path.join(directory, f"rank.{rank}")


def make_fifos(directory, ranks):
    for rank in ranks:
        os.mkfifo(fifo_path(directory, rank), 0o600)


def open_for_rank(directory, rank, timeout_s=OPEN_TIMEOUT_S):
    """This rank's write end of its FIFO (kept open until the process ends), or None when the
    watcher did not open the read end within ``timeout_s`` (then nothing is watched)."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return os.open(fifo_path(directory, rank), os.O_WRONLY | os.O_NONBLOCK)
        except OSError as e:  # ENXIO: no reader yet
            if e.errno != errno.ENXIO or time.monotonic() > deadline:
                return None
            time.sleep(0.01)


def tell(fd, message):
    """Write ``message`` (FINISHED or ENDING) to the watcher; nothing if it is gone."""
    if fd is None:
        return
    try:
        os.write(fd, message)
    except OSError:
        pass


def lost_message(rank, size, pid, host):
    return (f"tapeflow.distribute: rank {rank} of {size} (pid {pid} on host {host}) was lost; "
            f"stopping\n")


def lost_report(ranks, size, pids, host):
    """The line for the ranks seen ending at once without having finished: one is the lost
    rank; with several, the others may be ranks mpiexec ended before the watcher looked."""
    if len(ranks) == 1:
        return lost_message(ranks[0], size, pids[ranks[0]], host)
    listed = f"{', '.join(map(str, ranks[:-1]))} and {ranks[-1]}"
    pid_list = ", ".join(str(pids[r]) for r in ranks)
    return (f"tapeflow.distribute: ranks {listed} of {size} (pids {pid_list} on host {host}) "
            f"ended at once: one was lost, the others ended with it; stopping\n")


def watch(directory, size, host, pids, grace_s=GRACE_S):
    """Watch the ranks ``pids`` ({rank: pid}, all on this host); exit status 1 when one was
    lost (after printing it), else 0.  Removes ``directory`` when done."""
    fds = {}
    try:
        fds = {rank: os.open(fifo_path(directory, rank), os.O_RDONLY | os.O_NONBLOCK)
               for rank in pids}
        said = {rank: b"" for rank in pids}
        live = dict(fds)
        while live:
            ended = _wait(live, said)
            if any(ENDING in message for message in said.values()):
                return 0
            lost = [rank for rank in ended if FINISHED not in said[rank]]
            if lost:
                sys.stderr.write(lost_report(lost, size, pids, host))
                sys.stderr.flush()
                _end_survivors(live, said, {r: pids[r] for r in live}, grace_s)
                return 1
        return 0
    finally:
        for fd in fds.values():
            os.close(fd)
        shutil.rmtree(directory, ignore_errors=True)


def _wait(live, said, timeout=None):
    """Read what the ranks wrote; the ranks whose FIFO closed (they ended), removed from
    ``live``.  Returns as soon as one has ended, or after ``timeout`` seconds."""
    poller = select.poll()
    by_fd = {fd: rank for rank, fd in live.items()}
    for fd in by_fd:
        poller.register(fd, select.POLLIN)
    deadline = None if timeout is None else time.monotonic() + timeout
    while True:
        left = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
        ended = []
        for fd, _ in poller.poll(left):
            rank = by_fd[fd]
            data = _read_all(fd)
            said[rank] += data or b""
            if data is None:
                ended.append(rank)
                poller.unregister(fd)
                del live[rank]
        if ended or (deadline is not None and time.monotonic() >= deadline):
            return sorted(ended)


def _read_all(fd):
    """What is waiting in ``fd``; None at end of file (the writer closed it)."""
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 4096)
        except BlockingIOError:
            return b"".join(chunks)
        if not chunk:
            return None if not chunks else b"".join(chunks)
        chunks.append(chunk)


def _end_survivors(live, said, pids, grace_s):
    """SIGKILL the ranks still running ``grace_s`` seconds after one was lost."""
    deadline = time.monotonic() + grace_s
    while live and time.monotonic() < deadline:
        _wait(live, said, timeout=deadline - time.monotonic())
    for rank in live:
        try:
            os.kill(pids[rank], signal.SIGKILL)
        except ProcessLookupError:
            pass


def main(argv):
    directory, size, host, *pairs = argv
    pids = dict(tuple(int(n) for n in pair.split(":")) for pair in pairs)
    return watch(directory, int(size), host, pids)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
