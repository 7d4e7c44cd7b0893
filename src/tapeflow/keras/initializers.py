"""``keras.initializers``: tapeflow's initializers (``tapeflow.initializers.__all__``), the same
objects, and Keras 3's lower-case names, which Keras defines as the classes themselves
(``keras.initializers.he_normal is keras.initializers.HeNormal``)."""
from ..initializers import *  # noqa: F401,F403 - exactly tapeflow.initializers.__all__
from ..initializers import __all__ as _initializer_names
from ..initializers import Constant as constant
from ..initializers import GlorotNormal as glorot_normal
from ..initializers import GlorotUniform as glorot_uniform
from ..initializers import HeNormal as he_normal
from ..initializers import HeUniform as he_uniform
from ..initializers import LecunNormal as lecun_normal
from ..initializers import LecunUniform as lecun_uniform
from ..initializers import Ones as ones
from ..initializers import Orthogonal as orthogonal
from ..initializers import RandomNormal as random_normal
from ..initializers import RandomUniform as random_uniform
from ..initializers import TruncatedNormal as truncated_normal
from ..initializers import Zeros as zeros

__all__ = _initializer_names + [
    "constant", "glorot_normal", "glorot_uniform", "he_normal", "he_uniform", "lecun_normal",
    "lecun_uniform", "ones", "orthogonal", "random_normal", "random_uniform", "truncated_normal",
    "zeros",
]
