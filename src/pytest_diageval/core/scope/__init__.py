"""The scope a question sets (004's ``scope_contract``): the floor the code reads from the query
(``floor``), which the planner may narrow and never widen; the rules a claim is judged by
(``claims``); one session's scope and the claims it sets aside (``session``).

Imports the contract (the ``ScopeContract`` model) and the text normalisation; the judge and
the agents read a scope through it. Other subpackages import only the modules in ``__all__``.
"""

__all__ = ["claims", "floor", "session"]
