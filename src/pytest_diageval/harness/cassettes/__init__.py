"""Recording and replay of the model's calls: the vcrpy session, the cassette format and its
checks, the request diff that explains a stale cassette, secret scrubbing and scanning, replay
matching, and the re-record command a message names.

May import the core, the agents and ``harness.settings``. vcrpy is imported by ``session``
only, so a scripted run never loads it. Other subpackages import only the modules in
``__all__``.
"""

__all__ = ["format", "rerecord", "session"]
