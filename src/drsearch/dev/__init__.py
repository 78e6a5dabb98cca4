"""Scripted stand-ins for the models around drsearch: OpenAI-compatible chat servers on
127.0.0.1 (real HTTP) whose replies are pure functions of the request, so a run, a grading
or a generation against them needs no weights and no network, and repeats byte for byte.

- ``chat``: the server and the scripted agent model of the tests (``serve_fake``), the
  rule-based responder (``serve_rules``, ``Rule``);
- ``agent``: the demo's reader agent (search the question, open the first hit, answer from it);
- ``judge``: the oracle judge (correct iff the answer equals the reference, case aside);
- ``drbencher``: the DrBencher generator's rule-based model (docs/GENERATE.md).

``drsearch dev model --script agent|judge|drbencher`` serves one of them (docs/QUICKSTART.md);
the tests, ``make demo`` and ``make sample-release`` use these same modules.
"""
