"""Small model functions for the wrapper tests (module level, so joblib's workers can load them)."""
import tapeflow as tf


def regression_mlp(X, y, units=16, learning_rate=0.02):
    model = tf.keras.Sequential([tf.keras.layers.Input(shape=X.shape[1:]),
                                 tf.keras.layers.Dense(units, activation="relu"),
                                 tf.keras.layers.Dense(y.shape[1])])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate), loss="mse")
    return model


def softmax_classifier(X, y, units=16, learning_rate=0.05):
    model = tf.keras.Sequential([tf.keras.layers.Input(shape=X.shape[1:]),
                                 tf.keras.layers.Dense(units, activation="relu"),
                                 tf.keras.layers.Dense(y.shape[1], activation="softmax")])
    model.compile(optimizer=tf.keras.optimizers.Adam(learning_rate),
                  loss="categorical_crossentropy")
    return model
