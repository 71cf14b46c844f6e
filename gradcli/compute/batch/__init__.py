"""Batch evaluation over many points: ``--points FILE`` and ``--grid SPEC`` (see ``gradcli.expression.sources``)."""
