"""The scenario harness: the YAML scenario format, its loader and schema, and the expectation
checks that the pytest plugin turns into test items."""

__all__: list[str] = []
