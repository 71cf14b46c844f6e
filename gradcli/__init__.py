"""gradcli: a derivative calculator that shows finite differences, TensorFlow's GradientTape and
SymPy side by side, with the error of each."""

__version__ = "0.1.0"
