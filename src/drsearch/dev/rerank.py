"""A scripted reranker (``drsearch dev model --script rerank``): answers the prompts of
``drsearch.dense.rerank`` by word overlap, with no model weights.

- listwise (the prompt lists ``[i] passage`` lines and a ``Search Query:``): the passages
  ordered by how many distinct query words each contains, ties by identifier, as
  ``[3] > [1] > [2]``; with ``reverse`` the other way round (so a test can tell a reranked
  list from the retriever's);
- pointwise (a ``Passage:`` line): that count, at most 10;
- anything else (the endpoint probe): ``OK``.

``status``: when set, every request is answered with that HTTP status (an endpoint that is
down). ``requests`` records each request body. Deterministic: a pure function of the request.
"""

from __future__ import annotations

import re
import threading
from typing import Any

from .chat import completion, error_body

_WORD = re.compile(r"[a-z0-9]+")
_PASSAGE = re.compile(r"^\[(\d+)\] (.*)$", re.M)
_QUERY = re.compile(r"^Search Query: (.*)$", re.M)
_POINT = re.compile(r"^Passage: (.*)$", re.M)


def _overlap(query: str, text: str) -> int:
    return len(set(_WORD.findall(query.lower())) & set(_WORD.findall(text.lower())))


class RerankResponder:
    def __init__(self, reverse: bool = False) -> None:
        self.reverse = reverse
        self.status: int | None = None
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def respond(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self._lock:
            self.requests.append(body)
        if self.status is not None:
            return self.status, error_body("the scripted reranker is down", "server_error")
        prompt = str(body["messages"][-1]["content"])
        model = str(body.get("model", "rerank"))
        query = _QUERY.search(prompt)
        point = _POINT.search(prompt)
        if query and point:
            grade = min(10, _overlap(query.group(1), point.group(1)))
            return 200, completion(str(grade), model, prompt=prompt)
        passages = _PASSAGE.findall(prompt)
        if query and passages:
            scored = [(_overlap(query.group(1), text), int(i)) for i, text in passages]
            scored.sort(key=lambda e: (e[0], -e[1]) if self.reverse else (-e[0], e[1]))
            return 200, completion(" > ".join(f"[{i}]" for _, i in scored), model, prompt=prompt)
        return 200, completion("OK", model, prompt=prompt)


__all__ = ["RerankResponder"]
