"""The language-model stages and the session that drives them: Planner, Executor and
Verifier (prompts as package files), the ``LLM`` client (openai + instructor), the scripted
model that answers from a scenario file, token usage, and ``ChatService``, which runs one
diagnosis from query to persisted verdict.

May import the core, openai and instructor; never the harness, pytest or vcrpy.
"""

__all__ = [
    "chat_service",
    "executor",
    "forced_call",
    "llm",
    "results",
    "script_content",
    "scripted",
    "usage",
]
