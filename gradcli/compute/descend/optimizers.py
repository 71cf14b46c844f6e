"""Keras 3's optimizers as ``descend`` builds them: every number they step with held in the run's dtype.

Keras (and with it TensorFlow) is imported only inside these functions.
"""

from __future__ import annotations

import inspect
from typing import Any

from gradcli.methods.tf_runtime import load_tensorflow

# Keras 3 optimizer classes by CLI name ("manual", the guide's hand-written loop, has none).
KERAS_CLASSES = {
    "sgd": "SGD", "momentum": "SGD", "nesterov": "SGD", "adam": "Adam", "adamw": "AdamW", "rmsprop": "RMSprop",
    "adagrad": "Adagrad", "adadelta": "Adadelta", "adamax": "Adamax", "nadam": "Nadam", "lion": "Lion",
    "ftrl": "Ftrl",
}

# Hyper-parameters Keras 3 turns into tensors by ``ops.cast(value, dtype)`` (or a Constant initializer):
# its updates ``ops.cast(self.momentum, variable.dtype)`` (and beta_1, beta_2, ...), which makes a Python
# float a float32 tensor first (0.9 -> 0.8999999761581421). Handed over as ``numpy.float64`` (still a
# ``float``) they stay exact in a float64 run. The others (epsilon, rho, Ftrl's) only meet tensors in
# arithmetic, which converts a Python float straight to the tensor's dtype (and Adadelta's
# ``rho * variable`` fails in a graph when rho is a numpy scalar). Nadam's fixed decay 0.96 is cast the
# same way inside Keras and stays rounded through float32.
CAST_HYPERPARAMETERS = frozenset({"momentum", "beta_1", "beta_2", "weight_decay", "initial_accumulator_value"})


def _keras_class(name: str):
    load_tensorflow()  # quiet import first: Keras imports TensorFlow
    import keras

    return getattr(keras.optimizers, KERAS_CLASSES[name])


def optimizer_hyperparameters(name: str, momentum: float, cls=None) -> dict[str, float]:
    """The optimizer's float hyper-parameters (momentum, betas, epsilon, rho, ...) as gradcli sets them:
    Keras' defaults, with ``momentum`` for momentum and nesterov. The learning rate is not among them."""
    if cls is None:
        cls = _keras_class(name)
    params: dict[str, float] = {}
    for p in inspect.signature(cls.__init__).parameters.values():
        if p.name in ("learning_rate", "ema_momentum") or type(p.default) is not float:
            continue
        params[p.name] = p.default
    if name in ("momentum", "nesterov"):
        params["momentum"] = float(momentum)
    return params


def make_optimizer(name: str, lr: float, momentum: float, dtype: str):
    """A Keras 3 optimizer whose learning rate and hyper-parameters are held in ``dtype``.

    Keras keeps the learning rate in a ``floatx()`` (float32) variable by default, so a float64 run
    would step with 0.10000000149011612 instead of 0.1 and part from the hand-written loop after a few
    steps; building it under ``floatx = dtype`` keeps the two identical. In a float64 run the
    hyper-parameters Keras casts through float32 go over as ``numpy.float64`` (``CAST_HYPERPARAMETERS``).
    """
    cls = _keras_class(name)
    import keras

    kwargs: dict[str, Any] = {"learning_rate": float(lr)}
    hyper = optimizer_hyperparameters(name, momentum, cls)
    if dtype == "float64":
        import numpy as np

        kwargs.update({k: np.float64(v) if k in CAST_HYPERPARAMETERS else v for k, v in hyper.items()})
    elif name in ("momentum", "nesterov"):
        kwargs["momentum"] = hyper["momentum"]
    if name == "nesterov":
        kwargs["nesterov"] = True
    saved = keras.config.floatx()
    keras.config.set_floatx(dtype)
    try:
        return cls(**kwargs)
    finally:
        keras.config.set_floatx(saved)
