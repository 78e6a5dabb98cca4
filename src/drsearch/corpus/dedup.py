"""Documents → unique documents: validation, URL canonicalisation, exact-duplicate removal.

Pure functions over batches, so a distributed engine can run them as map (``check_document``,
per line) → group by content key (``merge_duplicates``, per group) without rewriting:

1. ``check_document`` validates one input line (a JSON object with a non-empty ``url`` and a
   ``text`` with at least one non-space character; ``title`` a string if present; every string
   valid Unicode, i.e. no lone surrogate, else ``not_unicode``) and
   returns it with its canonical URL and content key, or the reason it is rejected.
2. ``resolve_url_conflicts``: several documents with one canonical URL but different texts
   keep the text given most often (ties: the smallest content key; order-independent); the
   others are rejected as ``conflicting_url``.
3. ``merge_duplicates``: documents with the same content key (xxh3-128 of normalised text)
   become one document. Its representative is the one with the smallest canonical URL; every
   other URL of the group (original and final URLs) becomes an alias, so open-by-URL
   resolves each of them. Its docid is ``stable_docid(representative URL)``.

The same set of input lines gives the same documents, docids and aliases in any order.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..contract import InvalidInputError
from ..index import canonicalize_url
from .docids import content_key, stable_docid

URL_KEYS = ("final_url",)  # metadata keys that hold other addresses of the same page
_DROPPED = ("docid", "aliases")


@dataclass(frozen=True, slots=True)
class CheckedDocument:
    """A valid input document with its canonical URL and content key."""

    where: str
    url: str
    canonical_url: str
    title: str
    text: str
    key: str
    aliases: tuple[str, ...]
    metadata: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Rejected:
    """An input line that is not a usable document: where, why (a short reason) and a message."""

    where: str
    reason: str
    message: str


def read_lines(path: str | Path) -> Iterator[tuple[str, object]]:
    """(``path:line``, decoded JSON or a Rejected) for each non-blank line. Raises
    InvalidInputError when the file cannot be opened."""
    try:
        fh = open(path, "rb")  # noqa: SIM115 - closed in finally
    except OSError as e:
        raise InvalidInputError(f"cannot read {path}: {e.strerror}") from e
    try:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{n}"
            try:
                yield where, json.loads(line)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                yield where, Rejected(where, "not_json", f"{where}: not valid JSON ({e.__class__.__name__})")
    finally:
        fh.close()


def _encodable(value: object) -> bool:
    """Whether UTF-8 can encode every string in ``value`` (a decoded JSON value): JSON can
    spell a lone surrogate (``"\\ud800"``), which it cannot."""
    if isinstance(value, str):
        if value.isascii():  # O(1) in CPython: the common case costs no scan
            return True
        text = value
    elif isinstance(value, (dict, list)):
        text = json.dumps(value, ensure_ascii=False)
    else:
        return True
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_document(where: str, raw: object) -> CheckedDocument | Rejected:
    """Validate one decoded line (see the module docstring); never raises."""
    if isinstance(raw, Rejected):
        return raw
    if not isinstance(raw, dict):
        return Rejected(where, "not_an_object", f"{where}: a document must be a JSON object")
    url, text, title = raw.get("url"), raw.get("text"), raw.get("title", "")
    if not isinstance(url, str) or not url.strip():
        return Rejected(where, "no_url", f"{where}: 'url' must be a non-empty string")
    if not isinstance(text, str) or not text.strip():
        return Rejected(where, "no_text", f"{where}: document {url} has no text")
    if not isinstance(title, str):
        return Rejected(where, "bad_title", f"{where}: 'title' must be a string ({url})")
    bad = [k for k, v in raw.items() if not (_encodable(k) and _encodable(v))]
    if bad:  # the index stores every field as UTF-8
        return Rejected(where, "not_unicode", f"{where}: {', '.join(map(ascii, bad))} not valid Unicode "
                        f"(a lone surrogate; {url!a})")
    extra = [raw.get(k) for k in URL_KEYS] + list(raw.get("aliases") or [])
    aliases = tuple(sorted({a for a in extra if isinstance(a, str) and a.strip() and a != url}))
    metadata = {k: v for k, v in raw.items() if k not in ("url", "text", "title", *_DROPPED)}
    return CheckedDocument(where, url, canonicalize_url(url), title, text, content_key(text), aliases,
                           metadata)


def resolve_url_conflicts(docs: Iterable[CheckedDocument]) -> tuple[list[CheckedDocument], list[Rejected]]:
    """One text per canonical URL: the most frequent (then smallest) content key wins, its
    copies are kept for ``merge_duplicates`` and the others are rejected."""
    by_url: dict[str, list[CheckedDocument]] = {}
    for d in docs:
        by_url.setdefault(d.canonical_url, []).append(d)
    kept: list[CheckedDocument] = []
    rejected: list[Rejected] = []
    for url in sorted(by_url):
        group = sorted(by_url[url], key=lambda d: (d.key, d.where))
        votes = Counter(d.key for d in group)
        winner = min(votes, key=lambda k: (-votes[k], k))
        for d in group:
            if d.key == winner:
                kept.append(d)
            else:
                rejected.append(Rejected(d.where, "conflicting_url", f"{d.where}: {url} was already given "
                                         "with a different text; this line is skipped"))
    return kept, rejected


def merge_duplicates(group: list[CheckedDocument]) -> dict[str, Any]:
    """One index document from a group of exact duplicates (same content key)."""
    rep = min(group, key=lambda d: (d.canonical_url, d.where))
    urls = {u for d in group for u in (d.url, *d.aliases)}
    aliases = sorted(u for u in urls if u != rep.url and canonicalize_url(u) != rep.canonical_url)
    doc = {**rep.metadata, "docid": stable_docid(rep.canonical_url), "url": rep.url,
           "title": rep.title, "text": rep.text, "aliases": aliases}
    if len(group) > 1:
        doc["duplicate_urls"] = sorted({d.url for d in group} - {rep.url})
    return doc


@dataclass
class Deduplicated:
    """The outcome of ``deduplicate``: unique documents in docid order, rejected lines and
    how many valid documents were merged into another (``duplicates``)."""

    documents: list[dict[str, Any]]
    rejected: list[Rejected]
    duplicates: int
    input_documents: int


def deduplicate(lines: Iterable[tuple[str, object]]) -> Deduplicated:
    """check → resolve URL conflicts → group by content key → merge (see the module docstring)."""
    checked: list[CheckedDocument] = []
    rejected: list[Rejected] = []
    n = 0
    for where, raw in lines:
        n += 1
        result = check_document(where, raw)
        (rejected if isinstance(result, Rejected) else checked).append(result)  # type: ignore[arg-type]
    kept, conflicts = resolve_url_conflicts(checked)
    groups: dict[str, list[CheckedDocument]] = {}
    for d in kept:
        groups.setdefault(d.key, []).append(d)
    docs = sorted((merge_duplicates(g) for g in groups.values()), key=lambda d: d["docid"])
    ids = [d["docid"] for d in docs]
    if len(set(ids)) != len(ids):  # 64-bit ids: practically impossible, but never silent
        raise InvalidInputError("two different canonical URLs map to the same docid (xxh3-64 collision)")
    return Deduplicated(docs, rejected + conflicts, len(kept) - len(docs), n)


__all__ = [
    "CheckedDocument",
    "Deduplicated",
    "Rejected",
    "check_document",
    "deduplicate",
    "merge_duplicates",
    "read_lines",
    "resolve_url_conflicts",
]
