"""pytest-xdist: keep a scenario's items on one worker (``loadgroup``), and a scheduler whose
bookkeeping stays linear.

May import ``harness.settings`` only (xdist's own modules load inside the hooks). Only the
plugin imports it, through the modules in ``__all__``.
"""

__all__ = ["group_scheduler", "scheduling"]
