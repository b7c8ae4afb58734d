"""pytest entry point of pytest-diageval (registered through the ``pytest11`` entry point).

Hooks, options and fixtures only; the work lives in the layers below.
"""
