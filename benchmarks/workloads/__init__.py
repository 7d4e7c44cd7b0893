"""The five training workloads of issue 22 (W1-W5), each in tapeflow and its peers.

``spec`` defines them (shapes, initial weights, batches, the BLAS floor's GEMMs) in plain numpy;
``keras_models`` builds them in tapeflow or Keras 3; ``torch_peer`` and ``jax_peer`` write them
in PyTorch and plain jax; ``child`` times one framework in its own process, for
``benchmarks/bench_workloads.py``.
"""
