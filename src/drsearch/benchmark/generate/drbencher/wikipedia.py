"""Grounding articles from Wikipedia: each entity's article through the MediaWiki Action API,
fetched by ``drsearch corpus fetch``'s client.

The paper grounds every clue in the entity's Wikipedia article. :func:`fetch_articles` asks,
for each entity of a generation (``entities.jsonl``, and the partners of ``gold.jsonl``), the
Action API for the article titled by its label as plain text with its Wikidata item::

    GET {api}?action=query&format=json&formatversion=2&prop=extracts|pageprops
        &ppprop=wikibase_item&explaintext=1&redirects=1&titles={label}

The requests are a URL list fetched by :func:`drsearch.corpus.fetch.fetch_urls`: robots.txt
honoured, at most ``per_host`` requests at once per host, retries with ``Retry-After``, a
descriptive User-Agent, and the crawl directory as the cache (a rerun asks only what is not
fetched yet). An article is kept only when its page's ``wikibase_item`` is the entity's QID
(a label that names another page, after redirects, is ``wrong_article``); the result is an
articles file (``{"docid": "wiki-QID", "qid", "title", "text", "url"}``, sorted by QID) that a
generator config's ``articles`` takes.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlencode

from ....contract import InvalidInputError
from ....contract.atomic import write_bytes_atomic
from ....corpus.crawl import read_body, read_records
from ....corpus.fetch import FetchSettings, fetch_urls
from ....index import canonicalize_url

ARTICLE_PATH = "/wiki/"


def api_url(api: str, title: str) -> str:
    """The Action API request for the plain-text article ``title`` and its Wikidata item."""
    query = urlencode({"action": "query", "format": "json", "formatversion": "2",
                       "prop": "extracts|pageprops", "ppprop": "wikibase_item", "explaintext": "1",
                       "redirects": "1", "titles": title})
    return f"{api}?{query}"


def generation_entities(gen_dir: Path) -> list[tuple[str, str]]:
    """(QID, label) of every entity of a generation: discover's, then gold's partners."""
    found: dict[str, str] = {}
    for name, pick in (("entities.jsonl", lambda r: [r]), ("gold.jsonl", lambda r: r.get("entities", []))):
        path = gen_dir / name
        if not path.is_file():
            if name == "entities.jsonl":
                raise InvalidInputError(f"{path}: no such file (run the generator to discover first)")
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            for e in pick(json.loads(line)):
                found.setdefault(str(e["qid"]), str(e["label"]))
    return sorted(found.items(), key=lambda kv: int(kv[0][1:]))


def _site(api: str) -> str:
    return api.split("/w/api.php", 1)[0] if "/w/api.php" in api else api.rsplit("/", 1)[0]


def parse_article(body: bytes, qid: str) -> tuple[dict[str, Any] | None, str]:
    """(article, "") from an Action API answer, or (None, reason)."""
    try:
        pages = json.loads(body)["query"]["pages"]
    except (ValueError, KeyError, TypeError):
        return None, "not_mediawiki_json"
    if len(pages) != 1 or pages[0].get("missing") or "extract" not in pages[0]:
        return None, "no_article"
    page = pages[0]
    item = (page.get("pageprops") or {}).get("wikibase_item")
    if item != qid:
        return None, f"wrong_article ({page.get('title')} is {item or 'no Wikidata item'})"
    return {"qid": qid, "text": str(page["extract"]).strip(), "title": str(page["title"])}, ""


def fetch_articles(entities: Iterable[tuple[str, str]], api: str, out: Path, crawl: Path,
                   settings: FetchSettings | None = None) -> dict[str, Any]:
    """Fetch the entities' articles (the crawl directory is the cache) and write ``out``;
    returns ``{"entities", "articles", "skipped": {QID: reason}, "fetch": summary}``."""
    pairs = list(entities)
    urls = {qid: api_url(api, label) for qid, label in pairs}
    crawl.mkdir(parents=True, exist_ok=True)
    url_file = crawl / "article-urls.txt"
    write_bytes_atomic(url_file, "".join(f"{u}\n" for u in urls.values()).encode("utf-8"))
    polite = settings or replace(FetchSettings(), concurrency=2, per_host=1)
    summary = fetch_urls(url_file, crawl, polite)
    records = {r.canonical_url: r for r in read_records(crawl).records}
    site = _site(api)
    articles: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for qid, _label in pairs:
        rec = records.get(canonicalize_url(urls[qid]))
        if rec is None or rec.body is None:
            skipped[qid] = (rec.error if rec is not None else None) or "not_fetched"
            continue
        article, reason = parse_article(read_body(crawl, rec), qid)
        if article is None:
            skipped[qid] = reason
            continue
        url = site + ARTICLE_PATH + quote(article["title"].replace(" ", "_"))
        articles.append({"docid": f"wiki-{qid}", **article, "url": url})
    text = "".join(json.dumps(a, ensure_ascii=False, sort_keys=True) + "\n" for a in articles)
    write_bytes_atomic(out, text.encode("utf-8"))
    return {"articles": len(articles), "entities": len(pairs), "fetch": summary.get("run", {}),
            "skipped": dict(sorted(skipped.items()))}


__all__ = ["api_url", "fetch_articles", "generation_entities", "parse_article"]
