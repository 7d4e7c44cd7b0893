"""Assertions shared by the suite's packages (``tests/`` is on ``sys.path``, as conftest's home)."""
import numpy as np


def assert_nested_allclose(actual, expected, rtol=1e-7, atol=0.0, path="value"):
    """``numpy.testing.assert_allclose`` leaf by leaf through dicts, lists and tuples of the same
    structure (a ``History.history``, say); ``pytest.approx`` refuses nested dicts since pytest 9.

    The message names the leaf that differs (``value['loss'][1]``)."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), f"{path}: a dict was expected, got {type(actual).__name__}"
        assert actual.keys() == expected.keys(), \
            f"{path}: keys {sorted(actual)} != {sorted(expected)}"
        for key in expected:
            assert_nested_allclose(actual[key], expected[key], rtol, atol, f"{path}[{key!r}]")
    elif isinstance(expected, (list, tuple)):
        assert isinstance(actual, (list, tuple)) and len(actual) == len(expected), \
            f"{path}: {actual!r} does not have the length of {expected!r}"
        for i, (a, e) in enumerate(zip(actual, expected)):
            assert_nested_allclose(a, e, rtol, atol, f"{path}[{i}]")
    else:
        np.testing.assert_allclose(actual, expected, rtol=rtol, atol=atol, err_msg=path)
