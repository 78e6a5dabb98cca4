"""The scripted (oracle) judge of the grading tests: shipped as ``scripts/offline_recipe/judge.py``
(the construction recipe's offline grading runs on it too); re-exported here for the tests."""

from __future__ import annotations

from offline_recipe.judge import FakeJudge, Reply, checklist, correctness, dsqa, response_of, serve_judge

__all__ = ["FakeJudge", "Reply", "checklist", "correctness", "dsqa", "response_of", "serve_judge"]
