"""The computations: grad, hessian, derivative, descend, for one point and (batch/) for many."""
