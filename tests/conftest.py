"""Fixtures of the whole test suite."""

from __future__ import annotations

import pytest


@pytest.fixture(autouse=True)
def no_job_summary(monkeypatch: pytest.MonkeyPatch) -> None:
    """The inner pytest runs of the tests (pytester, subprocesses) must not append their
    diageval summaries to the outer CI job's summary: GitHub Actions sets
    ``GITHUB_STEP_SUMMARY`` for every step, and the plugin appends to it when it is set. The
    outer run read it when it started; a test that needs it sets it itself."""
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)
