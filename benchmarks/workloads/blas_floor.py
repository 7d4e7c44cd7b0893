"""The BLAS floor: a workload step's matrix products (``spec.Workload.gemms``: the dense and
im2col convolution GEMMs of the forward and backward) run alone in numpy, on preallocated
float32 operands and outputs.  No framework's step can beat it on the same BLAS; a step
within 2x of it spends at most half its time outside the products."""
import numpy as np


class BlasFloor:
    label = "BLAS floor"

    def __init__(self, workload, weights, batches):
        rng = np.random.default_rng(0)
        self.products = []
        for count, a_shape, b_shape in workload.gemms:
            a = rng.standard_normal(a_shape, dtype=np.float32)
            b = rng.standard_normal(b_shape, dtype=np.float32)
            self.products += [(a, b, np.matmul(a, b))] * count
        self.steps = workload.steps_per_round

    def first_step(self):
        return None  # nothing to check: it trains nothing

    def run_round(self):
        for _ in range(self.steps):
            for a, b, out in self.products:
                np.matmul(a, b, out=out)


def runners(workload, weights, batches):
    return [BlasFloor(workload, weights, batches)]
