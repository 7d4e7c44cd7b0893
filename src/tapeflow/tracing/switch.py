"""``tf.switch_case`` and ``tf.case``: many-way branching, as chains of ``tf.cond``.

Eagerly the chosen branch runs alone, as in TensorFlow.  In a trace each becomes nested
``If`` equations, so gradients flow through the taken branch (to second order), and every
branch must return the same structure of tensors (``tf.cond``'s check names the branch).
"""
from ..core.context import context
from ..core.tensor import Tensor, convert_to_tensor
from ..ops.arithmetic import equal
from .control_flow import cond

__all__ = ["switch_case", "case"]


def switch_case(branch_index, branch_fns, default=None, name="switch_case"):
    """Run ``branch_fns[branch_index]`` (a list of callables, or ``(int, callable)`` pairs, or a
    dict ``{int: callable}``); an index with no branch runs ``default``, or the last branch when
    there is none (TensorFlow's rule)."""
    branches = _indexed_branches(branch_fns)
    if default is None:
        default = branches[-1][1]
    index = branch_index if isinstance(branch_index, Tensor) else convert_to_tensor(branch_index)
    if index._value.dtype.kind not in "iu" or index._value.ndim != 0:
        raise TypeError(f"switch_case: branch_index must be a scalar int32 or int64 tensor, got "
                        f"a {index._value.dtype.name} tensor of shape {tuple(index._value.shape)}")
    if context().trace is None:  # eagerly: one branch runs, as TensorFlow's
        chosen = int(index.numpy())
        for key, fn in branches:
            if key == chosen:
                return fn()
        return default()
    return _chain([(equal(index, key), fn) for key, fn in branches], default)


def case(pred_fn_pairs, default=None, exclusive=False, strict=False, name="case"):
    """Run the callable of the first true predicate of ``pred_fn_pairs`` (a list of
    ``(bool tensor, callable)``, or a dict of them), else ``default``; with ``exclusive``, more
    than one true predicate raises (eagerly; in a trace the first true one is taken)."""
    pairs = list(pred_fn_pairs.items()) if isinstance(pred_fn_pairs, dict) else \
        list(pred_fn_pairs)
    if not pairs:
        if default is None:
            raise ValueError("case: pred_fn_pairs is empty and there is no default")
        return default()
    for k, pair in enumerate(pairs):
        if not (isinstance(pair, (tuple, list)) and len(pair) == 2 and callable(pair[1])):
            raise TypeError(f"case: entry {k} of pred_fn_pairs is not a (predicate, callable) "
                            f"pair")
    preds = [(p if isinstance(p, Tensor) else convert_to_tensor(p), fn) for p, fn in pairs]
    for p, _ in preds:
        if p._value.dtype.kind != "b" or p._value.ndim != 0:
            raise TypeError("case: every predicate must be a scalar bool tensor")
    if default is None:
        default = preds[-1][1]
        preds = preds[:-1]
    if context().trace is None:
        true = [fn for p, fn in preds if bool(p.numpy())]
        if exclusive and len(true) > 1:
            from ..errors import InvalidArgumentError
            raise InvalidArgumentError(None, None, f"case: {len(true)} predicates are true; "
                                       f"exclusive=True allows at most one")
        return true[0]() if true else default()
    return _chain(preds, default)


def _indexed_branches(branch_fns):
    if isinstance(branch_fns, dict):
        items = sorted(branch_fns.items())
    else:
        items = [b if isinstance(b, (tuple, list)) else (k, b) for k, b in enumerate(branch_fns)]
    if not items:
        raise ValueError("switch_case: branch_fns must not be empty")
    for key, fn in items:
        if not isinstance(key, int) or not callable(fn):
            raise TypeError(f"switch_case: branch {key!r} is not an (int, callable) pair")
    return items


def _chain(preds, default):
    """cond(p0, f0, cond(p1, f1, ... default)): the first true predicate's branch."""
    def from_(k):
        if k == len(preds):
            return default
        pred, fn = preds[k]
        return lambda: cond(pred, fn, from_(k + 1))
    return from_(0)()
