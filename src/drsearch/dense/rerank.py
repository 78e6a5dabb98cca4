"""``+rerank``: the top N of any retriever reordered by an LLM (an OpenAI-compatible endpoint).

BrowseComp-Plus' shape, either of two modes (the prompts are constants here, and their SHA-256
is part of the retriever's configuration, so the identity says which prompt ranked):

- ``listwise`` (RankGPT's): one request shows the query and the N passages numbered ``[1]`` ..
  ``[N]`` and asks for their order (``[2] > [1] > ...``); the identifiers read from the answer, in
  order (unknown and repeated ones skipped), come first, the passages it left out follow in the
  retriever's order. A hit's ``score`` is ``N − position`` (N for the first).
- ``pointwise``: one request a passage asks for a relevance grade 0..10; the passages are ordered
  by grade, ties in the retriever's order, and ``score`` is the grade (an answer without a grade
  counts 0).

Requests are deterministic (``temperature`` 0, a fixed ``seed``) and each goes through ``cache``
where one is given (``drsearch run --database``: the run's replay cache, kind ``rerank``), so a
reranked run replays offline. An endpoint that cannot answer (unreachable, timed out, a non-2xx
status, a body that is not a chat completion) is :class:`UpstreamUnavailableError`: never a
fallback to the unreranked list. :meth:`LLMReranker.probe` checks the endpoint at start-up.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from ..contract import InvalidInputError, UpstreamUnavailableError, check_k

MODES = ("listwise", "pointwise")
DEFAULT_RERANK_DEPTH = 20
PASSAGE_CHARS = 1200  # each passage as shown to the model (the chunk's first characters)
SEED = 20260811

LISTWISE_PROMPT = (
    "I will provide you with {n} passages, each indicated by a numerical identifier []. Rank the "
    "passages based on their relevance to the search query.\n\n{passages}\n\nSearch Query: {query}\n\n"
    "Rank the {n} passages above based on their relevance to the search query. All the passages "
    "should be included and listed using identifiers, in descending order of relevance. The output "
    "format should be [] > [], e.g., [2] > [1]. Only respond with the ranking results, do not say "
    "any word or explain.")
POINTWISE_PROMPT = (
    "Search Query: {query}\n\nPassage: {passage}\n\nHow relevant is the passage to the search query? "
    "Answer with one integer from 0 (not relevant) to 10 (perfectly relevant) and nothing else.")
PROMPTS = {"listwise": LISTWISE_PROMPT, "pointwise": POINTWISE_PROMPT}
_ID = re.compile(r"\[(\d+)\]")
_GRADE = re.compile(r"\b(10|[0-9])\b")


class CallCache(Protocol):
    """What the reranker's requests go through: ``drsearch.agents.replay.ReplayCache`` fits."""

    def fetch(self, kind: str, key: Any, describe: str,
              live: Callable[[], tuple[bool, bytes]] | None) -> tuple[bool, bytes]: ...


@dataclass(frozen=True, slots=True)
class RerankConfig:
    """The endpoint (``base_url`` as an OpenAI client takes it, e.g. ``http://host:port/v1``),
    the model, how many of the retriever's best are reordered (``depth``), the ``mode``, the
    environment variable holding an API key (None: no key), and the request timeout."""

    base_url: str
    model: str
    depth: int = DEFAULT_RERANK_DEPTH
    mode: str = "listwise"
    api_key_env: str | None = None
    timeout_s: float = 120.0

    def checked(self) -> RerankConfig:
        """Itself, or InvalidInputError (one line) naming the bad field."""
        if not self.base_url.startswith(("http://", "https://")):
            raise InvalidInputError(f"--rerank-url {self.base_url!r}: not an http:// or https:// URL")
        if not self.model:
            raise InvalidInputError("--rerank-model: give the reranker's model name")
        if self.mode not in MODES:
            raise InvalidInputError(f"--rerank-mode {self.mode!r}: not {' or '.join(MODES)}")
        check_k(self.depth, 100)
        if self.api_key_env is not None and not os.environ.get(self.api_key_env):
            raise InvalidInputError(f"--rerank-api-key-env {self.api_key_env}: not set")
        return self


def prompt_sha256(mode: str) -> str:
    return hashlib.sha256(PROMPTS[mode].encode("utf-8")).hexdigest()


class LLMReranker:
    """Reorders passages for a query with ``config``'s model; requests through ``cache``."""

    def __init__(self, config: RerankConfig, cache: CallCache | None = None) -> None:
        import httpx  # the agents extra; only a reranked retriever needs it

        self.config = config.checked()
        self.cache = cache
        key = os.environ.get(config.api_key_env, "") if config.api_key_env else ""
        self._client = httpx.Client(timeout=config.timeout_s,
                                    headers={"authorization": f"Bearer {key}"} if key else {})
        self._httpx = httpx

    def describe(self) -> dict[str, Any]:
        """What ``/stats`` shows: the configuration (no key), the prompt and its SHA-256."""
        body = {k: v for k, v in asdict(self.config).items() if k != "timeout_s"}
        return {**body, "prompt": PROMPTS[self.config.mode], "prompt_sha256": prompt_sha256(self.config.mode),
                "temperature": 0, "seed": SEED, "passage_chars": PASSAGE_CHARS}

    def config_string(self) -> str:
        c = self.config
        return f"rerank:{c.mode}:depth={c.depth}:model={c.model}:prompt={prompt_sha256(c.mode)[:12]}"

    def close(self) -> None:
        self._client.close()

    # -- requests ----------------------------------------------------------------------------
    def _post(self, body: dict[str, Any]) -> str:
        url = self.config.base_url.rstrip("/") + "/chat/completions"
        try:
            r = self._client.post(url, json=body)
        except self._httpx.HTTPError as e:
            raise UpstreamUnavailableError(f"reranker {url}: unreachable "
                                           f"({e.__class__.__name__}: {e})") from None
        if not 200 <= r.status_code < 300:
            raise UpstreamUnavailableError(f"reranker {url}: HTTP {r.status_code} ({r.text[:200]!r})")
        try:
            content = r.json()["choices"][0]["message"]["content"]
        except (ValueError, KeyError, IndexError, TypeError):
            raise UpstreamUnavailableError(f"reranker {url}: the answer is not a chat completion "
                                           f"({r.text[:200]!r})") from None
        return content if isinstance(content, str) else ""

    def chat(self, prompt: str) -> str:
        """The model's answer to ``prompt`` (through the cache where there is one)."""
        body = {"model": self.config.model, "messages": [{"role": "user", "content": prompt}],
                "temperature": 0, "seed": SEED}
        if self.cache is None:
            return self._post(body)

        def live() -> tuple[bool, bytes]:
            return True, self._post(body).encode("utf-8")

        _, answer = self.cache.fetch("rerank", ["rerank", self.config.base_url, body],
                                     f"rerank({prompt[:200]})", live)
        return answer.decode("utf-8")

    def probe(self) -> None:
        """One minimal request, uncached: UpstreamUnavailableError if the endpoint cannot answer."""
        self._post({"model": self.config.model, "messages": [{"role": "user", "content": "OK"}],
                    "max_tokens": 1, "temperature": 0})

    # -- ordering ----------------------------------------------------------------------------
    def rerank(self, query: str, passages: list[str]) -> list[tuple[int, float]]:
        """(index into ``passages``, score) in the model's order (module docstring)."""
        shown = [" ".join(p.split())[:PASSAGE_CHARS] for p in passages]
        if not shown:
            return []
        if self.config.mode == "pointwise":
            grades = []
            for text in shown:
                m = _GRADE.search(self.chat(POINTWISE_PROMPT.format(query=query, passage=text)))
                grades.append(float(m.group(1)) if m else 0.0)
            graded = sorted(range(len(shown)), key=lambda i: (-grades[i], i))
            return [(i, grades[i]) for i in graded]
        listing = "\n".join(f"[{i}] {text}" for i, text in enumerate(shown, 1))
        answer = self.chat(LISTWISE_PROMPT.format(n=len(shown), passages=listing, query=query))
        order: list[int] = []
        for m in _ID.finditer(answer):
            i = int(m.group(1)) - 1
            if 0 <= i < len(shown) and i not in order:
                order.append(i)
        order += [i for i in range(len(shown)) if i not in order]
        return [(i, float(len(shown) - pos)) for pos, i in enumerate(order)]


__all__ = ["DEFAULT_RERANK_DEPTH", "LISTWISE_PROMPT", "MODES", "POINTWISE_PROMPT", "PROMPTS", "CallCache",
           "LLMReranker", "RerankConfig", "prompt_sha256"]
