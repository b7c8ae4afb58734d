"""Recording and replay of the model's calls: the vcrpy session, the cassette file's form and its
checks, the request diff that explains a stale cassette, secret scrubbing and scanning, replay
matching, the re-record command a message names, and a recording's progress per request.

May import the core, the agents and ``harness.settings``. vcrpy is loaded with
``cassette_session`` only, so a scripted run never loads it; its names outside ``vcr.VCR`` and
``vcr.Request`` sit in ``vcr_adapter``. Other subpackages import only the modules in
``__all__``.
"""

__all__ = ["cassette_file", "cassette_session", "interrupt", "progress", "rerecord", "samples"]
