"""Rewrites of one equation in terms of the equation that made its operand (``optimize``).

``Neg(Mul(c, x))`` with ``c`` a constant becomes ``Mul(-c, x)``: a gradient through
``a - b`` negates a cotangent that is often a constant times a value (the MSE's
``2/n * (y_true - y_pred)``), and the negation is then one pass over the array less.
``-(c * x)`` and ``(-c) * x`` give the same bits for every dtype numpy negates: IEEE
multiplication rounds the magnitude and takes the sign from the operands' signs, and
integers (signed or not) wrap modulo 2**bits either way.  Only a NaN's sign bit may differ,
which no comparison sees.
"""
import numpy as np

from ..ops.arithmetic import MUL, NEG

__all__ = ["fold_negated_product"]


def fold_negated_product(e, ins, made_by, consts, graph):
    """The equation replacing ``e`` (operands ``ins``, renamed) or None to keep it.
    ``made_by`` maps a value to the kept equation that made it; ``consts`` the constants,
    to which the negated one is added (its id from ``graph.new_value``)."""
    if e.op is not NEG or e.attrs:
        return None
    product = made_by.get(ins[0])
    if product is None or product.op is not MUL or product.attrs:
        return None
    operands = list(product.inputs)
    for side, vid in enumerate(operands):
        c = consts.get(vid)
        if c is not None and getattr(c, "dtype", None) is not None and c.dtype.kind in "iufc":
            with np.errstate(all="ignore"):  # -INT_MIN wraps, as the negation would
                negated = NEG.forward(c)
            shape, dtype = graph.types[vid]
            operands[side] = graph.new_value(shape, dtype)
            consts[operands[side]] = negated
            return type(e)(MUL, {}, tuple(operands), e.outputs, e.source)
    return None
