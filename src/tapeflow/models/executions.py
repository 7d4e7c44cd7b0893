"""``compile(steps_per_execution=N)``: N batches per call of the step function, as Keras runs them.

fit / evaluate / predict hand the step function N batches at a time.  A traced
step (``tf.function`` of ``train_step``) is called up to ``UNROLLED`` times inside
one more ``tf.function``: the step's graph, traced once per batch shape, is
inlined that many times into one compiled graph, so the steps do the same
arithmetic in the same order as one call each would (the weights after an epoch
are bitwise those of N=1), the metrics' state is carried from step to step
inside the graph, and only the last step's logs are results (the others' are
dropped as dead code).  An execution of more batches calls that graph again.  A step
that runs eagerly (``run_eagerly``, a second-order optimizer, a replication
strategy's wrapper) is called N times in Python instead.

As in Keras, a batch callback is called once per execution: ``on_train_batch_begin``
with the execution's first batch index, ``on_train_batch_end`` with that index
plus N - 1 (also for a last, shorter group of batches), and logs are read back
once per execution.

``"auto"`` (tf.keras 2.13's value; Keras 3 takes integers only) is chosen per
epoch size: ``steps // 10`` batches, between 1 and 32, so that a progress bar
still moves about ten times an epoch; 1 where the epoch's size is unknown.
"""
import itertools
import numbers

from ..tracing.function import Function, function

__all__ = ["checked", "per_execution", "groups", "multi_step", "AUTO_MAX", "AUTO_UPDATES",
           "UNROLLED"]

AUTO_MAX = 32       # "auto" never runs more batches in one call than this
AUTO_UPDATES = 10   # ... and leaves about this many progress-bar updates an epoch
# The most steps one compiled graph holds: an execution of more runs several such graphs
# (its callbacks are still called once).  The graph, its trace time and the temporaries a
# call holds grow with the steps in it, while the per-call overhead it saves stops paying
# beyond a few steps (bench_housing.py: 8 and 32 steps a graph ran alike or 8 faster).
UNROLLED = 8


def checked(value):
    """compile's ``steps_per_execution``: a positive integer or "auto"."""
    if value == "auto" and isinstance(value, str):
        return "auto"
    if isinstance(value, bool) or not isinstance(value, numbers.Integral) or value < 1:
        raise ValueError(f"compile: steps_per_execution must be a positive integer or 'auto', "
                         f"got {value!r}")
    return int(value)


def per_execution(value, steps):
    """The batches per call for an epoch of ``steps`` batches (None: unknown)."""
    if value != "auto":
        return value
    if not steps:
        return 1
    return max(1, min(AUTO_MAX, steps // AUTO_UPDATES))


def groups(batches, n, start=0):
    """``(index of the first batch, [up to n batches])`` over the iterator ``batches``, whose
    first batch has index ``start`` (a tuple of one batch where ``n`` is 1)."""
    if n == 1:  # the default: no islice and list per batch
        for index, batch in enumerate(batches, start):
            yield index, (batch,)
        return
    batches = iter(batches)
    index = start
    while True:
        group = list(itertools.islice(batches, n))
        if not group:
            return
        yield index, group
        index += n


def multi_step(step, collect=False, unrolled=UNROLLED):
    """A callable taking a list of batches: ``step`` run on each in turn, ``unrolled`` steps
    to one compiled call where ``step`` is a ``tf.function``.  It returns the last step's
    result, or with ``collect`` (predict) all of them, in order.  Its ``for_effects`` runs the
    same steps for a loop that reads its logs from the metrics: a batch alone for its effects
    only (``Function.run_for_effects``: the results are not computed); several in the graph
    of several steps, which computes the last step's results alone (a second compilation of
    that large graph would cost ~20 ms to save ~1 us a step)."""
    if isinstance(step, Function):
        def steps(*batches):
            outputs = [step(batch) for batch in batches]
            return tuple(outputs) if collect else outputs[-1]
        compiled = function(steps, autograph=False, name=f"{step.name}_steps")

        def run(batches):
            results = []
            for start in range(0, len(batches), unrolled):
                chunk = batches[start:start + unrolled]
                if len(chunk) == 1:  # one batch: the step's own graph, no second trace
                    results.append(step(chunk[0]))
                else:
                    out = compiled(*chunk)
                    results.extend(out if collect else [out])
            return results if collect else results[-1]

        def for_effects(batches):
            if len(batches) == 1:
                step.run_for_effects(batches[0])
            else:  # the graph of several steps computes the last one's results alone: kept
                run(batches)
        run.traced = compiled  # the multi-step tf.function (its traces, for inspection)
        run.for_effects = for_effects
        return run

    def run_eagerly(batches):
        outputs = [step(batch) for batch in batches]
        return outputs if collect else outputs[-1]
    run_eagerly.for_effects = run_eagerly
    return run_eagerly
