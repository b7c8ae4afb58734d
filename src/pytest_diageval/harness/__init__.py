"""The evaluation harness the pytest plugin is made of.

Subpackages, each importing only those before it (``tests/test_layers.py`` holds the table):
``format`` (the scenario file) < ``checks`` (one evaluator per ``expect`` key) and
``cassettes`` (recording and replay) < ``report`` < ``mutation``; ``xdist`` (scheduling).
The root modules tie them into pytest: ``settings`` (options, read before any scenario),
``outputs`` (the files a run writes), ``hookspecs`` (the hooks the plugin adds), ``collect``
(a file as its scenario node), ``outside_dirs`` (scenario files no folder setting claims),
``runner`` (one scenario through the pipeline), ``items`` (scenario nodes and their expectation
items), ``lean_nodes`` (a node field made on first use), ``fixture`` (``diageval_run``) and
``stale`` (stale-cassette detection); ``pytest_adapter`` holds the pytest names outside
``pytest``'s public ones. May import the core and the agents.
"""

__all__: list[str] = []
