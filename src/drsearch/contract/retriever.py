"""The ``Retriever`` protocol: what every front-end asks of a ranker over one frozen corpus.

The HTTP server (``drsearch.server``), the MCP server, the Pyserini and LangChain shims and the
agents' in-process searcher are typed against this protocol, never against the concrete
engine, so a second ranker (dense, hybrid, a shard broker) plugs in by implementing it.
``drsearch.index.Engine`` is the BM25 implementation. The contract each method keeps is the
HTTP API's (docs/DESIGN.md): the same errors (this package's ``errors``) and the same result
values (``models``) whatever ranks underneath.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .models import Document, SearchResult
from .request import MAX_K, MAX_QUERY_TERMS


@runtime_checkable
class BlocklistInfo(Protocol):
    """What a front-end may know of the blocklist a retriever applies: where it came from,
    its SHA-256 (part of the fleet identity), how many docids it lists and whether a docid
    is one of them (for logs only: a blocked document answers exactly like an absent one)."""

    @property
    def source(self) -> str: ...

    @property
    def sha256(self) -> str: ...

    def __len__(self) -> int: ...

    def __contains__(self, docid: object) -> bool: ...


class ReleaseInfo(Protocol):
    """The release a corpus file belongs to, as its manifest names it (None: not named)."""

    @property
    def name(self) -> str | None: ...

    @property
    def revision(self) -> str | None: ...


class BlocklistOrigin(Protocol):
    """Where the blocklist a retriever applies came from (the release rule's decision):
    ``origin`` is ``release``, ``release-override``, ``release-none``, ``file`` or ``none``;
    ``release`` the release the file belongs to; ``release_sha256`` that release's own list's
    SHA-256 (run.json and ``/health`` record both)."""

    @property
    def origin(self) -> str: ...

    @property
    def release(self) -> ReleaseInfo | None: ...

    @property
    def release_sha256(self) -> str | None: ...


@runtime_checkable
class Retriever(Protocol):
    """A ranker over one frozen corpus. Implementations are thread-safe for ``search``,
    ``open_document`` and ``stats``.

    - ``search`` returns the ``k`` best documents, each by its best chunk, blocked documents
      never among them; raises InvalidQueryError, InvalidKError, QueryTimeoutError (past
      ``deadline``, ``time.monotonic()`` seconds), CorruptIndexError.
    - ``open_document`` returns one document by docid or any spelling of its URL; raises
      DocumentNotFoundError for an unknown *or blocked* one, InvalidRequestError unless
      exactly one of ``docid``/``url`` is given.
    - ``meta`` is the corpus' identity and counts: at least ``content_identity``,
      ``documents``, ``chunks`` and ``schema_version``.
    - ``stats()`` is the body of ``GET /stats``; ``blocked_matched`` how many listed docids
      are documents of the corpus; ``blocklist_choice`` where the blocklist came from (a
      release's database gets its release's list: docs/SERVER.md); ``passages`` whether the
      corpus was built from passage lines (``{"id", "contents"}``: ``/retrieve`` then answers
      each passage's ``contents`` as built, in Search-R1's shape).
    """

    @property
    def path(self) -> Path: ...

    @property
    def meta(self) -> Mapping[str, Any]: ...

    @property
    def blocklist(self) -> BlocklistInfo: ...

    @property
    def blocked_matched(self) -> int: ...

    @property
    def blocklist_choice(self) -> BlocklistOrigin: ...

    @property
    def passages(self) -> bool: ...

    def search(self, query: str, k: int = 10, *, with_text: bool = True, deadline: float | None = None,
               max_terms: int = MAX_QUERY_TERMS, max_k: int = MAX_K) -> SearchResult: ...

    def open_document(self, *, docid: str | None = None, url: str | None = None) -> Document: ...

    def stats(self) -> dict[str, Any]: ...

    def close(self) -> None: ...


__all__ = ["BlocklistInfo", "BlocklistOrigin", "ReleaseInfo", "Retriever"]
