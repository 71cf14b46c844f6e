"""Propagating input uncertainties through an expression, four ways side by side, and when the first is wrong.

- :mod:`~gradcli.uncertainty.inputs`: the inputs (means, standard deviations, correlations or a covariance
  file) and their covariance matrix, checked symmetric positive semi-definite, and its factor;
- :mod:`~gradcli.uncertainty.moments`: linear (sqrt(gᵀΣg)) and second order (½tr(HΣ), ½tr((HΣ)²)) from the
  gradient and Hessian that gradcli's engines computed, each input's share of the variance;
- :mod:`~gradcli.uncertainty.monte_carlo`: samples of the inputs through gradcli's vectorised evaluator,
  their mean, standard deviation, standard errors and quantiles;
- :mod:`~gradcli.uncertainty.interval`: interval arithmetic over gradcli's expression tree (an enclosure of
  the values over a box, rounded outward);
- :mod:`~gradcli.uncertainty.verdict`: whether linear propagation holds, and which input's spread is to blame;
- :mod:`~gradcli.uncertainty.propagation`: the whole computation for a request, point by point (the library's
  gradcli.library.propagate_request runs it).

No Typer or rich here; NumPy is imported when something is computed.
"""
