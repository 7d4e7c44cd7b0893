"""``tapeflow.layers`` (also ``tapeflow.keras.layers``)."""
from .base import Layer, name_scope  # noqa: F401
from .activity_regularization import ActivityRegularization  # noqa: F401
from .core import Activation, Dense, Dropout, Flatten, Input, InputLayer  # noqa: F401
from .merging import (  # noqa: F401
    Add, Average, Concatenate, Dot, Maximum, Minimum, Multiply, Subtract, add, average,
    concatenate, dot, maximum, minimum, multiply, subtract,
)
from .normalization import BatchNormalization, LayerNormalization  # noqa: F401
from .preprocessing import Normalization, Rescaling, UnitNormalization  # noqa: F401
from .activation import ELU, Identity, LeakyReLU, PReLU, ReLU, Softmax  # noqa: F401
from .attention import Attention, MultiHeadAttention  # noqa: F401
from .lambda_layer import Lambda  # noqa: F401
from .tf_op_layer import TFOpLambda  # noqa: F401 - installs the recording of ops on KerasTensors
from .reshaping import Permute, RepeatVector, Reshape  # noqa: F401
from .embedding import Embedding, Masking  # noqa: F401
from .recurrent import GRU, LSTM, RNN, Bidirectional, SimpleRNN  # noqa: F401
from .recurrent_cells import GRUCell, LSTMCell, SimpleRNNCell  # noqa: F401
from .convolutional import Conv1DTranspose, Conv2DTranspose  # noqa: F401
from .convolutional import Conv1DTranspose as Convolution1DTranspose  # noqa: F401
from .convolutional import Conv2DTranspose as Convolution2DTranspose  # noqa: F401
from .convolutional import (  # noqa: F401
    AveragePooling1D, AveragePooling2D, Conv1D, Conv2D, GlobalAveragePooling1D,
    GlobalAveragePooling2D, GlobalMaxPooling1D, GlobalMaxPooling2D, MaxPooling1D, MaxPooling2D,
)
from .convolutional import AveragePooling1D as AvgPool1D  # noqa: F401 - Keras's aliases
from .convolutional import AveragePooling2D as AvgPool2D  # noqa: F401
from .convolutional import Conv1D as Convolution1D  # noqa: F401
from .convolutional import Conv2D as Convolution2D  # noqa: F401
from .convolutional import GlobalAveragePooling1D as GlobalAvgPool1D  # noqa: F401
from .convolutional import GlobalAveragePooling2D as GlobalAvgPool2D  # noqa: F401
from .convolutional import GlobalMaxPooling1D as GlobalMaxPool1D  # noqa: F401
from .convolutional import GlobalMaxPooling2D as GlobalMaxPool2D  # noqa: F401
from .convolutional import MaxPooling1D as MaxPool1D  # noqa: F401
from .convolutional import MaxPooling2D as MaxPool2D  # noqa: F401

# The public names, once: ``tapeflow.keras.layers`` re-exports exactly these.
__all__ = [
    "Layer", "name_scope", "Input", "InputLayer", "Dense", "Activation", "Dropout", "Flatten",
    "Add", "Average", "Concatenate", "Dot", "Maximum", "Minimum", "Multiply", "Subtract",
    "add", "average", "concatenate", "dot", "maximum", "minimum", "multiply", "subtract",
    "BatchNormalization", "LayerNormalization", "Normalization", "Rescaling", "UnitNormalization",
    "ELU", "Identity", "LeakyReLU", "PReLU", "ReLU", "Softmax", "Attention", "MultiHeadAttention",
    "Lambda", "Permute", "RepeatVector", "Reshape", "Embedding", "Masking",
    "GRU", "LSTM", "RNN", "Bidirectional", "SimpleRNN", "GRUCell", "LSTMCell", "SimpleRNNCell",
    "Conv1D", "Conv2D", "Conv1DTranspose", "Conv2DTranspose", "Convolution1D", "Convolution2D",
    "Convolution1DTranspose", "Convolution2DTranspose",
    "AveragePooling1D", "AveragePooling2D", "MaxPooling1D", "MaxPooling2D",
    "GlobalAveragePooling1D", "GlobalAveragePooling2D", "GlobalMaxPooling1D", "GlobalMaxPooling2D",
    "AvgPool1D", "AvgPool2D", "MaxPool1D", "MaxPool2D",
    "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalMaxPool1D", "GlobalMaxPool2D",
    "ActivityRegularization",
]
