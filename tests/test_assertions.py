"""The suite's own nested comparison (tests/assertions.py) fails where it should."""
import pytest

from assertions import assert_nested_allclose


def test_equal_structures_within_tolerance_pass():
    assert_nested_allclose({"loss": [1.0, 2.0], "mae": (0.5,)},
                           {"loss": [1.0, 2.0 + 1e-9], "mae": [0.5]}, rtol=1e-6)


@pytest.mark.parametrize("actual, where", [
    ({"loss": [1.0, 2.1], "mae": [0.5]}, r"value\['loss'\]\[1\]"),
    ({"loss": [1.0], "mae": [0.5]}, r"value\['loss'\]: .* length"),
    ({"loss": [1.0, 2.0]}, r"value: keys"),
    ([1.0, 2.0], r"value: a dict was expected"),
])
def test_a_difference_is_named_by_its_path(actual, where):
    with pytest.raises(AssertionError, match=where):
        assert_nested_allclose(actual, {"loss": [1.0, 2.0], "mae": [0.5]}, rtol=1e-6)
