"""The local model server for recordings without a hosted LLM (the ``local`` extra):
``server`` assembles the GGUF and starts llama-cpp-python through ``shim``; ``chat`` is the
model-free chat logic (prompt, grammars, the OpenAI response) and ``sampling`` the grammar
sampler, both loaded only inside the server's process (``sampler_plan``: the sampler's
model-free chain and windows; ``llama_adapter``: the llama-cpp-python internals that
``sampling`` and ``shim`` use).

Imports nothing else of this package. Only the CLI imports it, through ``server``.
"""

__all__ = ["server"]
