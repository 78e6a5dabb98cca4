"""HTML → main text: the extraction library (pure functions over pages and batches).

``extract_page`` turns one stored response into a title, main text and language:
trafilatura first (``include_comments=False``, ``favor_precision`` by default: the
configuration that scores best on the 181-page benchmark, docs/EXTRACTION.md), the
visible text of the page (selectolax/lexbor) when trafilatura returns nothing or fails.
Plain text is passed through. Anything else (images, PDF, JSON …) is skipped with a
reason. ``extract_batch`` applies it to a batch of fetch records of one crawl directory;
it has no side effects, so batches can run in a process pool here or on a distributed
engine elsewhere. trafilatura and selectolax are the ``extract`` extra: imported on first
use, so the corpus package imports without them.
"""

from __future__ import annotations

import gzip
import re
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .crawl import FetchRecord, read_body
from .docids import stable_docid

HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
TEXT_TYPES = frozenset({"text/plain"})
Status = Literal["extracted", "empty", "skipped"]
_CHARSET = re.compile(r"charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", re.I)
_META_CHARSET = re.compile(rb"<meta[^>]+charset\s*=\s*[\"']?([A-Za-z0-9_.:-]+)", re.I)
_HIDDEN = "script, style, noscript, template, svg, head, iframe"


@dataclass(frozen=True, slots=True)
class ExtractSettings:
    """How pages are turned into text.

    ``favor_precision``/``include_comments``/``include_tables`` are passed to trafilatura;
    ``workers`` processes extract in parallel (1 = in this process); ``batch_size`` records
    go to a worker at a time.
    """

    favor_precision: bool = True
    include_comments: bool = False
    include_tables: bool = True
    workers: int = 2
    batch_size: int = 16


@dataclass(frozen=True, slots=True)
class PageText:
    """The outcome for one fetched page. ``status`` is ``extracted`` (non-empty text),
    ``empty`` (a page with no text) or ``skipped`` (``reason`` says why)."""

    url: str
    canonical_url: str
    status: Status
    reason: str | None = None
    title: str = ""
    text: str = ""
    lang: str | None = None
    extractor: str | None = None
    final_url: str | None = None
    content_type: str | None = None
    fetched_at: str | None = None

    def document(self) -> dict[str, Any]:
        """The document line written to docs.jsonl (docid from the canonical URL)."""
        doc: dict[str, Any] = {"docid": stable_docid(self.canonical_url), "url": self.url,
                               "title": self.title, "text": self.text}
        for key in ("final_url", "lang", "content_type", "extractor", "fetched_at"):
            value = getattr(self, key)
            if value is not None:
                doc[key] = value
        return doc


def media_type(content_type: str | None) -> str:
    """``text/html; charset=x`` → ``text/html`` (lower case; ``""`` when absent)."""
    return (content_type or "").split(";", 1)[0].strip().lower()


def looks_like_html(body: bytes) -> bool:
    """A cheap sniff for servers that send HTML without a content type."""
    head = body[:2048].lstrip().lower()
    return head.startswith((b"<!doctype html", b"<html")) or b"<html" in head


def decode_body(body: bytes, content_type: str | None) -> str:
    """Bytes → text: the header's charset, else UTF-8, else a ``<meta charset>``, else cp1252.
    Never raises (undecodable bytes become U+FFFD)."""
    candidates = []
    m = _CHARSET.search(content_type or "")
    if m:
        candidates.append(m.group(1))
    candidates.append("utf-8")
    meta = _META_CHARSET.search(body[:4096])
    if meta:
        candidates.append(meta.group(1).decode("ascii", "replace"))
    for enc in candidates:
        try:
            return body.decode(enc)
        except (LookupError, UnicodeDecodeError):
            continue
    return body.decode("cp1252", "replace")


def _visible_text(tree: Any) -> str:
    for node in tree.css(_HIDDEN):
        node.decompose()
    root = tree.body or tree.root
    if root is None:
        return ""
    lines = (" ".join(line.split()) for line in root.text(separator="\n").splitlines())
    return "\n".join(line for line in lines if line)


def _title_and_lang(tree: Any) -> tuple[str, str | None]:
    node = tree.css_first("title") or tree.css_first("h1")
    title = " ".join(node.text().split()) if node is not None else ""
    html_node = tree.css_first("html")
    lang = (html_node.attributes.get("lang") or "") if html_node is not None else ""
    code = lang.strip().split("-", 1)[0].split("_", 1)[0].lower()
    return title, (code if code.isalpha() and 2 <= len(code) <= 3 else None)


def extract_html(html: str, url: str | None, settings: ExtractSettings) -> tuple[str, str, str | None, str]:
    """(title, main text, language, extractor) of one HTML page. Never raises on bad HTML."""
    import trafilatura
    from selectolax.lexbor import LexborHTMLParser

    tree = LexborHTMLParser(html)
    title, lang = _title_and_lang(tree)
    try:
        text = trafilatura.extract(html, url=url, include_comments=settings.include_comments,
                                   include_tables=settings.include_tables,
                                   favor_precision=settings.favor_precision) or ""
    except Exception:  # trafilatura can fail on pathological markup: fall back, never crash
        text = ""
    if text.strip():
        return title, text, lang, "trafilatura"
    return title, _visible_text(tree), lang, "selectolax"


def extract_page(rec: FetchRecord, body: bytes, settings: ExtractSettings) -> PageText:
    """The text of one successfully fetched page (see the module docstring)."""
    mtype = media_type(rec.content_type)
    if mtype in HTML_TYPES or (mtype in ("", "application/octet-stream") and looks_like_html(body)):
        title, text, lang, extractor = extract_html(decode_body(body, rec.content_type),
                                                    rec.final_url or rec.url, settings)
    elif mtype in TEXT_TYPES:
        title, text, lang, extractor = "", decode_body(body, rec.content_type).strip(), None, "plain"
    else:
        return _page(rec, "skipped", reason=f"unsupported_content_type:{mtype or 'none'}")
    if not text.strip():
        return _page(rec, "empty", title=title, lang=lang, extractor=extractor)
    return _page(rec, "extracted", title=title, text=text, lang=lang, extractor=extractor)


def _page(rec: FetchRecord, status: Status, **fields: Any) -> PageText:
    return PageText(rec.url, rec.canonical_url, status, final_url=rec.final_url,
                    content_type=rec.content_type, fetched_at=rec.fetched_at, **fields)


def extract_batch(crawl: str, records: list[FetchRecord], settings: ExtractSettings) -> list[PageText]:
    """Extract a batch of successful fetch records of the crawl directory ``crawl`` (pure:
    reads bodies, writes nothing). An unreadable or damaged body is skipped with a reason."""
    out = []
    for rec in records:
        try:
            body = read_body(Path(crawl), rec)
        except (OSError, EOFError, zlib.error, gzip.BadGzipFile) as e:
            out.append(_page(rec, "skipped", reason=f"body_unreadable:{type(e).__name__}"))
            continue
        out.append(extract_page(rec, body, settings))
    return out


__all__ = [
    "HTML_TYPES",
    "ExtractSettings",
    "PageText",
    "decode_body",
    "extract_batch",
    "extract_html",
    "extract_page",
    "looks_like_html",
    "media_type",
]
