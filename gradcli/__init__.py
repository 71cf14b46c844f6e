"""gradcli: a derivative calculator that shows finite differences, TensorFlow's GradientTape and SymPy
side by side, with the error of each.

From Python (see :mod:`gradcli.api`)::

    import gradcli
    gradcli.grad("(x1+5)*x2**2", at={"x1": 2, "x2": 3}).to_dict()

The API is loaded on first use (``gradcli.grad`` ...), so ``import gradcli`` and ``gradcli --help`` stay
cheap; NumPy, SymPy and TensorFlow load only when a function is called.
"""

__version__ = "0.1.0"

_API = frozenset({"grad", "hessian", "derivative", "jvp", "hvp", "descend", "check", "eval", "evaluate", "steps",
                  "trace", "propagate", "implicit", "grad_columns", "hessian_columns", "derivative_columns", "Result", "GradcliError",
                  "UsageError", "ParseError", "ComputeError"})


def __getattr__(name: str):
    if name in _API or name == "api":  # gradcli.api.grad_columns as a fresh worker (Ray, Dask) writes it
        import importlib

        api = importlib.import_module("gradcli.api")  # not "from gradcli import api": that asks this function
        value = api if name == "api" else getattr(api, name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'gradcli' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | _API)
