"""``tf.distribute``: data-parallel training across processes and machines on MPI (mpi4py).

``pip install 'tapeflow[distributed]'``, then ``mpiexec -n N python script.py`` with::

    strategy = tf.distribute.MPIStrategy()
    with strategy.scope():
        model.compile(...)
        model.fit(x, y, batch_size=256)   # 256 per step over all ranks together
"""
from .mpi import INSTALL_HINT
from .strategy import MPIStrategy, current_strategy

__all__ = ["INSTALL_HINT", "MPIStrategy", "current_strategy"]
