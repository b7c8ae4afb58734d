"""The language-model stages and the session that drives them: Planner, Executor and
Verifier (prompts as package files), the ``LLM`` client (openai + instructor) with its
structured output, token usage and request options per stage, and ``ChatService``, which
runs one diagnosis from query to persisted verdict. The Grader of a ``rubric`` check runs
after it, never inside it. ``scripted/`` is the model that answers from a scenario file.

May import the core, openai and instructor (its internals in ``instructor_adapter``); never the
harness, pytest or vcrpy. Other
subpackages import only the modules in ``__all__``.
"""

__all__ = ["chat_service", "executor", "grader", "llm", "request_options", "results", "usage"]
