"""How the code reads text: normalisation and sentences (``normalised``), the tokens an
excerpt is matched by (``excerpt_tokens``), and the key facts a sentence asserts
(``key_facts``: numbers, entities, timestamps, polarity, modality, causal and action words)
with their closed vocabulary (``vocabulary``, from ``fact_vocabulary.yaml``); numbers with
their units and labels, and times with their zones (``quantities``, from
``structure_vocabulary.yaml``).

Imports nothing else of this package; the judge and the answer read text through it. Other
subpackages import only the modules in ``__all__``.
"""

__all__ = ["excerpt_tokens", "key_facts", "normalised", "quantities", "unmasked", "vocabulary"]
