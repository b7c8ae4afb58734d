"""Test helpers shared by the test suites (not collected as tests)."""

__all__: list[str] = []
