"""The pure core: what the code decides, with no language model and no pytest.

Six subpackages, each importing only ones before it (``tests/test_layers.py`` holds the
table): ``contract`` (the structures a model must fill, and the gatekeeper's rule names) <
``evidence`` (the mock world, its tools and the SQLite trail every call is recorded in);
``text`` (how text is read: normalisation, excerpt tokens, key facts) < ``scope`` (what the
question asks about, and the claims it sets aside) < ``judge`` (gatekeeper, claim ceilings,
fact support, score and verdict) < ``answer`` (what reaches the user, and the audit record of
why). Nothing here imports openai, instructor, vcrpy or pytest.
"""

__all__: list[str] = []
