"""Differentiation methods computed for a batch of points at once (one implementation per method)."""
