"""``RunHistoryWriter``: a run's history as files, written by an ordinary callback.

When training ends it writes, in the run directory, ``history.csv`` (a row per epoch, counted
from 1), ``history.json`` (each metric's values) and, with ``plot``, ``learning_curve.png``
(a panel per metric, its validation values beside it), from the ``History`` it is given, so a
resumed run's files hold the epochs before the resume too.  A run whose loss turned NaN
(``watch``) ends with an error instead, and leaves these files as they were.  Under MPI only
rank 0 writes (``writes``).
"""
import csv
import io
import json
import os

from ..callbacks.base import Callback
from ..saving.atomic import write_atomically, write_text_atomically

__all__ = ["RunHistoryWriter", "write_history", "plot_history"]


class RunHistoryWriter(Callback):
    def __init__(self, run_dir, history, watch=None, plot=True, writes=True):
        super().__init__()
        self.run_dir, self.history, self.watch = run_dir, history, watch
        self.plot, self.writes = plot, writes

    def on_train_end(self, logs=None):
        if self.watch is None or self.watch.nan_at is None:
            self.write()

    def write(self):
        """The files, now (a resumed run with no epoch left to train writes them too)."""
        if not self.writes:
            return
        history = self.history.history
        write_history(self.run_dir, history)
        if self.plot and history:
            plot_history(os.path.join(self.run_dir, "learning_curve.png"), history)


def write_history(run_dir, history):
    keys = list(history)
    n = max((len(v) for v in history.values()), default=0)
    rows = [[i + 1] + [history[k][i] if i < len(history[k]) else "" for k in keys]
            for i in range(n)]
    table = io.StringIO(newline="")
    writer = csv.writer(table)
    writer.writerow(["epoch"] + keys)
    writer.writerows(rows)
    write_text_atomically(os.path.join(run_dir, "history.csv"), table.getvalue(), newline="")
    write_text_atomically(os.path.join(run_dir, "history.json"),
                          json.dumps(history, indent=1) + "\n")


def plot_history(path, history):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    names = [k for k in history if not k.startswith("val_")]
    fig, axes = plt.subplots(1, len(names), figsize=(5 * len(names), 3.5), squeeze=False)
    for ax, name in zip(axes[0], names):
        epochs = range(1, len(history[name]) + 1)
        ax.plot(epochs, history[name], label=f"train {name}")
        if f"val_{name}" in history:
            val = history[f"val_{name}"]
            ax.plot(range(1, len(val) + 1), val, label=f"validation {name}")
        ax.set_xlabel("epoch")
        ax.set_title(name)
        ax.legend()
    fig.tight_layout()
    try:
        write_atomically(path, lambda tmp: fig.savefig(tmp, dpi=100, format="png"))
    finally:
        plt.close(fig)
