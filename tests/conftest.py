"""Shared test helpers: a CliRunner that keeps stderr apart, and a JSON-invoking shortcut."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import settings
from typer.testing import CliRunner

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

# The suite (and CI) draws the same examples every run, so a red run is a change, not luck; every case a
# search ever found is pinned with @example where it was found. GRADCLI_HYPOTHESIS=explore searches afresh.
settings.register_profile("repeatable", derandomize=True, print_blob=True)
settings.register_profile("explore", derandomize=False, print_blob=True)
settings.load_profile(os.environ.get("GRADCLI_HYPOTHESIS", "repeatable"))


@pytest.fixture(scope="session")
def runner() -> CliRunner:
    # Typer >= 0.12's CliRunner keeps stdout and stderr apart (result.stdout / result.stderr).
    return CliRunner()


@pytest.fixture(scope="session")
def invoke(runner):
    from gradcli.cli import app

    def run(*args: str):
        return runner.invoke(app, list(args), catch_exceptions=False)

    return run


@pytest.fixture(scope="session")
def invoke_json(invoke):
    def run(*args: str, code: int = 0):
        result = invoke(*args, "--format", "json")
        assert result.exit_code == code, (result.stdout, result.stderr)
        return json.loads(result.stdout)

    return run
