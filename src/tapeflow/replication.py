"""The strategy in effect, for code that runs unchanged on one process or on many.

``Model``, the callbacks and the trainer import this module, never ``tapeflow.distribute``:
a strategy (``tf.distribute.MPIStrategy``) registers itself here while its ``scope()`` is open,
and a model compiled there keeps it.  Each function below is the identity (or its one-process
answer) without a strategy; with one, the strategy wraps what the model does (ChainerMN's
``create_multi_node_optimizer`` / ``scatter_dataset`` / multi-node evaluator): it shards the
batches, sums the gradients and reduces the metrics' state.  Dependencies so run one way:
``distribute`` -> ``models``, ``callbacks`` -> this module.
"""

__all__ = ["current", "enter", "evaluating_strategy", "fit_callbacks", "gather", "leave", "of",
           "rank", "distribute_optimizer", "sum_gradients", "train_function"]

_entered = []  # the strategies whose scope() is open, innermost last


def enter(strategy):
    _entered.append(strategy)


def leave(strategy):
    _entered.remove(strategy)


def current():
    """The strategy of the innermost open ``scope()``, or None."""
    return _entered[-1] if _entered else None


def of(model):
    """The strategy ``model`` was compiled under, else the one whose scope is open, else None."""
    return getattr(model, "_distribute_strategy", None) or current()


def fit_callbacks(model, callbacks, verbose):
    """``(callbacks, verbose)`` for this process's ``fit``."""
    strategy = of(model)
    return (callbacks, verbose) if strategy is None else \
        strategy.fit_callbacks(model, callbacks, verbose)


def train_function(model, step):
    """``step`` (fit's train function), or the strategy's data-parallel step around it."""
    strategy = of(model)
    return step if strategy is None else strategy.train_function(model, step)


def sum_gradients(optimizer, grads):
    """In ``optimizer.apply``: the gradients of the global batch's mean loss, when a strategy
    wrapped the optimizer (``distribute_optimizer``); else ``grads`` themselves."""
    strategy = getattr(optimizer, "_distribute_strategy", None)
    return grads if strategy is None else strategy.sum_gradients(grads)


def distribute_optimizer(optimizer, strategy):
    """Make ``optimizer.apply`` sum its gradients over ``strategy``'s ranks first."""
    optimizer._distribute_strategy = strategy


def evaluating_strategy(model, x, steps):
    """The strategy that runs ``model.evaluate`` / ``predict`` on ``x`` over its ranks' shards,
    or None: the model evaluates ``x`` itself."""
    strategy = of(model)
    return strategy if strategy is not None and strategy.shards_inference(model, x, steps) \
        else None


def rank(model):
    """This process's rank under ``model``'s strategy (0 on one process: it writes the files)."""
    strategy = of(model)
    return 0 if strategy is None else strategy.rank


def gather(model, value):
    """Every rank's ``value`` in rank order, under ``model``'s strategy ([value] without one)."""
    strategy = of(model)
    return [value] if strategy is None or strategy.num_replicas_in_sync < 2 else \
        strategy._comm.gather_objects(value)
