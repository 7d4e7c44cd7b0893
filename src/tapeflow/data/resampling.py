"""``rejection_resample``: a dataset whose classes come out in a target distribution, by
TensorFlow's method: with probability m an element is taken from the data as it comes,
otherwise from a rejection sampler that accepts class i with probability a_i, where, for the
data's class distribution p and the target t,

    a_i = (t_i/p_i - m) / (max_j t_j/p_j - m),   m = min_j t_j/p_j.

Without ``initial_dist`` the data's distribution is estimated as the elements go by (counts
updated every 32 elements, as TensorFlow's).  Random draws come from ``seed`` or, without
one, from tapeflow's random state when each pass starts."""
import numpy as np

from ..tracing.function import TensorSpec
from .elements import UNKNOWN_CARDINALITY, as_arrays, as_tensors, call

__all__ = ["ResamplingMixin", "acceptance_and_mixing"]

_ESTIMATION_BATCH = 32


def acceptance_and_mixing(initial, target):
    """``(a, m)`` above: the per-class acceptance probabilities and the probability of taking
    an element straight from the data."""
    initial = np.asarray(initial, np.float32)
    target = np.asarray(target, np.float32)
    ratio = target / (initial + np.finfo(np.float32).tiny)
    low, high = ratio.min(), ratio.max()
    if high == low:                      # already the target: take the data as it comes
        return np.ones_like(ratio), np.float32(1.0)
    return (ratio - low) / (high - low), np.float32(min(low, 1.0))


class _Estimate:
    """The data's class distribution as seen so far (refreshed every 32 elements), and the
    acceptance probabilities and mixing probability it gives."""

    def __init__(self, num_classes, initial_dist, target):
        self.fixed = initial_dist is not None
        self.counts = np.zeros(num_classes, np.int64)
        self.pending = []
        self.target = target
        self.accept, self.mixing = (None, 0.0) if initial_dist is None else \
            acceptance_and_mixing(initial_dist, target)

    def see(self, label):
        if self.fixed:
            return
        self.pending.append(label)
        if self.accept is None or len(self.pending) == _ESTIMATION_BATCH:
            self.counts += np.bincount(self.pending, minlength=len(self.counts))
            self.pending = []
            self.accept, self.mixing = acceptance_and_mixing(
                self.counts / self.counts.sum(), self.target)


class ResamplingMixin:
    def rejection_resample(self, class_func, target_dist, initial_dist=None, seed=None,
                           name=None):
        """``(class, element)`` pairs whose classes follow ``target_dist``."""
        target = np.asarray(getattr(target_dist, "numpy", lambda: target_dist)(), np.float32)
        if target.ndim != 1 or (target < 0).any() or not np.isclose(target.sum(), 1.0, atol=1e-5):
            raise ValueError(f"rejection_resample: target_dist must be a probability vector, got "
                             f"{target.tolist()}")
        if initial_dist is not None:
            initial_dist = np.asarray(getattr(initial_dist, "numpy", lambda: initial_dist)(),
                                      np.float32)
            if initial_dist.shape != target.shape:
                raise ValueError(f"rejection_resample: initial_dist has {initial_dist.shape[0]} "
                                 f"classes and target_dist {target.shape[0]}")
        num_classes = target.shape[0]

        def labelled(element):
            """The element's class as class_func gives it (an integer scalar)."""
            label = as_arrays(call(class_func, as_tensors(element)))
            if label.ndim != 0 or label.dtype.kind not in "iu" or \
                    not 0 <= int(label) < num_classes:
                raise ValueError(f"rejection_resample: class_func must give an integer class in "
                                 f"[0, {num_classes}), got {label!r}")
            return label

        def make():
            rng = self._shuffle_rng(seed, True)
            estimate = _Estimate(num_classes, initial_dist, target)
            direct = self._iterate()          # TensorFlow reads the data twice: as it comes,
            filtered = self._iterate()        # and through the rejection sampler

            def accepted():
                for element in filtered:
                    label = labelled(element)
                    estimate.see(int(label))
                    if rng.random() < estimate.accept[int(label)]:
                        return label, element
                return None

            while True:
                if estimate.mixing > 0 and rng.random() < estimate.mixing:
                    element = next(direct, None)
                    pair = None if element is None else (labelled(element), element)
                else:
                    pair = accepted()
                if pair is None:                  # either source ended: the pass ends
                    return
                yield pair

        def spec():
            first = next(iter(self._iterate()), None)
            return None if first is None else (TensorSpec((), labelled(first).dtype),
                                               self.element_spec)
        return self._derive(make, None, UNKNOWN_CARDINALITY, spec)
