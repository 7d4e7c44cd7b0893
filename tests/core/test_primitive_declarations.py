"""One primitive, one statement (issue 20 item 5): every op tapeflow registers is declared
by one ``def_primitive`` call holding its forward, its gradient (a rule, an explicit
not-differentiable mark, or the reason it has none) and its compiled-graph kernel.

No upstream test covers how ops are declared (TensorFlow registers gradients apart, in
``ops.RegisterGradient``); the user-facing form is checked as tests/core/test_registry.py
checks ``tf.primitive``: forward and gradient to second order.
"""
import ast
import pathlib

import numpy as np
import pytest

import tapeflow as tf
from tapeflow.core.registry import (
    NOT_DIFFERENTIABLE,
    GradientRule,
    def_primitive,
    lookup_gradient,
    registered_primitives,
)

_SRC = pathlib.Path(tf.__file__).parent
_OLD_FORMS = ("register_gradient", "NotDifferentiable", "RegisterGradient")


def _own_primitives():
    return {name: op for name, op in registered_primitives().items()
            if op.origin.startswith("tapeflow.")}


def test_every_own_primitive_declares_its_gradient_once():
    """A rule or a not-differentiable mark, or a reason for having neither: never both, never none."""
    ops = _own_primitives()
    assert len(ops) > 150  # the walk sees the registry, not an empty scratch copy
    wrong = {}
    for name, op in ops.items():
        rule = lookup_gradient(name)
        declared = rule is NOT_DIFFERENTIABLE or isinstance(rule, GradientRule)
        if declared == (op.no_gradient is not None):
            wrong[name] = (rule, op.no_gradient)
    assert not wrong, f"primitives whose gradient is declared twice or not at all: {wrong}"


def test_every_rule_sits_in_its_primitive_module():
    """Beside each other: the rule comes from the module that declares the forward."""
    apart = {}
    for name, op in _own_primitives().items():
        rule = lookup_gradient(name)
        if isinstance(rule, GradientRule) and rule.fn.__module__ != op.forward.__module__:
            apart[name] = (op.forward.__module__, rule.fn.__module__)
    assert not apart, f"rules declared away from their primitive: {apart}"


def _old_form_statements(path, root):
    """Calls of the separate-statement forms and ``X.specialize = ...`` assignments in ``path``."""
    text = path.read_text()
    if not any(word in text for word in _OLD_FORMS + ("specialize",)):
        return []  # most modules: no need to parse them
    found = []
    for node in ast.walk(ast.parse(text, str(path))):
        if isinstance(node, ast.Call):
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            if name in _OLD_FORMS:
                found.append(f"{path.relative_to(root)}:{node.lineno} {name}(...)")
        elif isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Attribute) and t.attr == "specialize" for t in node.targets):
            found.append(f"{path.relative_to(root)}:{node.lineno} .specialize = ...")
    return sorted(found, key=lambda f: int(f.split(":")[1].split()[0]))


def test_the_separate_statement_forms_are_gone():
    registry = _SRC / "core" / "registry.py"  # where the public TensorFlow names are defined
    found = [f for p in sorted(_SRC.rglob("*.py")) if p != registry
             for f in _old_form_statements(p, _SRC)]
    assert not found, f"declare these in their def_primitive call instead: {found}"


def test_the_grep_sees_an_old_form(tmp_path):
    """The check above is live: a module with the old forms is reported."""
    module = tmp_path / "old.py"
    module.write_text('OP = def_primitive("Old", abs)\nOP.specialize = None\n'
                      'NotDifferentiable("Old")\nregister_gradient("Old")(abs)\n')
    assert _old_form_statements(module, tmp_path) == [
        "old.py:2 .specialize = ...", "old.py:3 NotDifferentiable(...)",
        "old.py:4 register_gradient(...)"]


def _double(x):
    return x * 2


@pytest.mark.parametrize("declaration, problem", [
    ({}, "got none"),
    ({"grad": lambda op, g: g, "not_differentiable": True}, "got grad= and not_differentiable"),
    ({"not_differentiable": True, "no_gradient": "why"}, "not_differentiable=True and no_gradient"),
    ({"not_differentiable": True, "saves": "inputs"}, "saves= and vectorized= describe grad="),
    ({"no_gradient": True}, "no_gradient= is the reason"),
    ({"grad": "not a rule"}, "grad= is a rule"),
])
def test_a_declaration_without_exactly_one_gradient_is_refused(declaration, problem):
    with pytest.raises(TypeError, match=r"def_primitive\('TestHalfDeclared'\)") as error:
        def_primitive("TestHalfDeclared", _double, **declaration)
    assert problem in str(error.value)
    assert "TestHalfDeclared" not in registered_primitives()


def test_one_declaration_holds_rule_and_kernel():
    def _double_grad(op, g):
        return g * 2.0

    def _double_kernel(in_types, attrs):
        return None

    op = def_primitive("TestDoubled", _double, grad=_double_grad, saves="inputs",
                       vectorized=False, specialize=_double_kernel)
    rule = lookup_gradient("TestDoubled")
    assert rule.fn is _double_grad and rule.saves_inputs and not rule.saves_outputs
    assert not rule.vectorized and op.specialize is _double_kernel and op.no_gradient is None


def test_user_primitive_with_its_gradient_in_one_statement_to_second_order():
    def _cube_grad(op, dy):
        (x,) = op.inputs
        return dy * 3.0 * x * x

    @tf.primitive("TestCubeOneStatement", grad=_cube_grad)
    def cube(x):
        return x ** 3

    x = tf.Variable(2.0)
    with tf.GradientTape() as t2:
        with tf.GradientTape() as t1:
            y = cube(x)
        d1 = t1.gradient(y, x)
    assert y.numpy() == 8.0 and d1.numpy() == 12.0
    assert t2.gradient(d1, x).numpy() == 12.0


def test_user_primitive_declared_not_differentiable_gives_none():
    @tf.primitive("TestRoundedOneStatement", not_differentiable=True)
    def rounded(x):
        return x.round()  # the array's own method: numpy or device arrays

    x = tf.Variable([0.4, 1.6])
    with tf.GradientTape() as tape:
        y = rounded(x) * x
    np.testing.assert_array_equal(tape.gradient(y, x).numpy(), [0.0, 2.0])
