"""distribute.watch, the death watch that names a killed rank, on plain processes (no MPI):
two children stand for a host's ranks, holding their FIFOs open as ranks do."""
import os
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading

import pytest

from tapeflow.distribute import watch

GRACE_S = 0.2
TIMEOUT_S = 30

_RANK = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, sys.argv[1])
    import watch
    fd = watch.open_for_rank(sys.argv[2], int(sys.argv[3]))
    print("ready" if fd is not None else "no watcher", flush=True)
    sys.stdin.readline()  # every rank watched before any ends
    says = {"finished": watch.FINISHED, "ending": watch.ENDING}.get(sys.argv[4])
    if says is None:
        time.sleep(60)
    watch.tell(fd, says)
""")


@pytest.fixture
def host(capsys):
    """``start(modes)``: a watch directory, one child rank per mode ("wait": sleep until
    killed, "finished" / "ending": say so and exit) and the watcher in a thread; the test
    then gets (children, finish) where ``finish()`` is (watch's status, its stderr)."""
    if not hasattr(os, "mkfifo"):
        pytest.skip("the watch needs FIFOs")
    children = []

    def start(modes):
        directory = tempfile.mkdtemp(prefix="tapeflow-test-watch-")
        watch.make_fifos(directory, range(len(modes)))
        children.extend(subprocess.Popen(
            [sys.executable, "-c", _RANK, os.path.dirname(watch.__file__), directory, str(rank),
             mode], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
            for rank, mode in enumerate(modes))
        status = []
        thread = threading.Thread(target=lambda: status.append(watch.watch(
            directory, len(modes), "here", {r: c.pid for r, c in enumerate(children)},
            grace_s=GRACE_S)))
        thread.start()
        for child in children:
            assert child.stdout.readline() == "ready\n"
        for child in children:
            child.stdin.write("go\n")
            child.stdin.flush()

        def finish():
            thread.join(TIMEOUT_S)
            assert not thread.is_alive() and not os.path.exists(directory)
            return status[0], capsys.readouterr().err
        return children, finish
    yield start
    for child in children:
        if child.poll() is None:
            child.kill()
        child.communicate()


def test_a_killed_rank_is_named_and_the_others_ended_after_the_grace(host):
    children, finish = host(["wait", "wait"])
    children[1].send_signal(signal.SIGKILL)
    status, err = finish()
    assert status == 1
    assert err == watch.lost_message(1, 2, children[1].pid, "here")
    assert "rank 1 of 2 (pid" in err and "was lost" in err
    assert children[0].wait(TIMEOUT_S) == -signal.SIGKILL  # left waiting: ended by the watch


def test_ranks_seen_ending_at_once_are_named_together_not_each_as_the_lost_one():
    pids = {0: 100, 1: 101, 2: 102}
    assert watch.lost_report([1], 3, pids, "h") == watch.lost_message(1, 3, 101, "h")
    together = watch.lost_report([0, 1, 2], 3, pids, "h")
    assert together == ("tapeflow.distribute: ranks 0, 1 and 2 of 3 (pids 100, 101, 102 on "
                        "host h) ended at once: one was lost, the others ended with it; "
                        "stopping\n")
    assert "rank " not in together  # no one rank is named as the lost one


def test_ranks_that_finish_are_not_reported(host):
    children, finish = host(["finished", "finished"])
    assert finish() == (0, "")
    assert [c.wait(TIMEOUT_S) for c in children] == [0, 0]


def test_a_rank_that_ends_the_run_on_purpose_silences_the_watch(host):
    children, finish = host(["wait", "ending"])
    children[1].wait(TIMEOUT_S)
    children[0].send_signal(signal.SIGKILL)  # as MPI_Abort ends the others
    assert finish() == (0, "")


def test_without_a_watcher_a_rank_goes_on_unwatched(tmp_path):
    watch.make_fifos(str(tmp_path), [0])
    assert watch.open_for_rank(str(tmp_path), 0, timeout_s=0.05) is None
    watch.tell(None, watch.FINISHED)  # nothing to tell, no error


def test_a_watcher_that_cannot_start_leaves_the_run_unwatched(monkeypatch):
    from tapeflow.distribute import mpi

    def no_room(**kwargs):
        raise OSError("No space left on device")
    monkeypatch.setattr(mpi.tempfile, "mkdtemp", no_room)
    with pytest.warns(RuntimeWarning, match="no watch of the ranks on here .*No space left"):
        assert mpi._start_watcher({0: 1, 1: 2}, 2, "here") is None
