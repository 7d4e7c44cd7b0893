"""The strict stand-in refuses what CuPy refuses: implicit conversion to numpy, mixing with numpy."""
import numpy as np
import pytest

from strict_device.strict_array import MODULE as xp, HostLeak, StrictArray


def test_numpy_cannot_take_a_strict_array_implicitly():
    a = xp.asarray(np.arange(3.0))
    with pytest.raises(HostLeak):
        np.asarray(a)
    with pytest.raises(HostLeak):
        np.sum(a)
    with pytest.raises(TypeError):  # a ufunc: numpy refuses, as __array_ufunc__ is None
        np.exp(a)


def test_mixing_with_a_numpy_array_is_refused_both_ways():
    a = xp.asarray(np.arange(3.0))
    with pytest.raises(HostLeak):
        a + np.ones(3)
    with pytest.raises(HostLeak):
        np.ones(3) * a
    with pytest.raises(HostLeak):
        xp.maximum(a, np.zeros(3))
    with pytest.raises(HostLeak):
        a[np.array([0, 1])]


def test_scalars_mix_and_results_stay_strict():
    a = xp.asarray(np.arange(3.0, dtype=np.float32))
    b = (a * 2.0 + np.float32(1)) / xp.ones(3, dtype=np.float32)
    assert isinstance(b, StrictArray) and b.dtype == np.float32
    assert isinstance(b.sum(), StrictArray) and b.sum().ndim == 0  # a 0-d array, as CuPy's
    assert isinstance(xp.add.at, object) and isinstance(a.T, StrictArray)
    np.testing.assert_array_equal(xp.asnumpy(b), [1.0, 3.0, 5.0])
    assert float(b[1]) == 3.0


def test_in_place_ufunc_methods_write_the_device_data():
    a = xp.zeros(3)
    xp.add.at(a, xp.asarray(np.array([0, 0, 2])), 1.0)
    np.testing.assert_array_equal(xp.asnumpy(a), [2.0, 0.0, 1.0])
