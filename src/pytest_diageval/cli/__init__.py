"""The ``diageval`` command: ``command`` parses and runs it; ``authoring`` holds the commands
that write scenario files from a recording, ``cases`` the scenario files it writes from a file
of questions (``scaffold --from``), and ``cassette_verdict`` what a cassette replays to (its
world, the code's verdict) for them.

The top of the package beside the plugin: may import the core, the agents, ``harness.format``,
the runner (with ``harness.settings`` and ``harness.cassettes``, to replay a cassette as the
plugin does) and ``local``.
"""

__all__ = ["authoring", "cases", "cassette_verdict", "command"]
