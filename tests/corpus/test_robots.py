"""robots.txt matching per RFC 9309 (robots.py), with the RFC's own examples."""

from __future__ import annotations

import pytest

from drsearch.corpus.fetch import USER_AGENT
from drsearch.corpus.robots import RobotsTxt, normalize_path, product_token, url_path

# RFC 9309 §5.1, "Simple Example"
RFC_SIMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""

# RFC 9309 §5.2, "Longest Match"
RFC_LONGEST = """\
User-Agent: foobot
Allow: /example/page/
Disallow: /example/page/disallowed.gif
"""


def allowed(robots: str, agent: str, url: str) -> bool:
    return RobotsTxt.parse(robots).for_agent(agent).allowed("https://www.example.com" + url)


@pytest.mark.parametrize(("agent", "url", "ok"), [
    ("foobot", "/example/page.html", True),
    ("foobot", "/example/allowed.gif", True),
    ("foobot", "/", False),
    ("foobot", "/publications/", False),
    ("foobot", "/example/other.html", False),
    ("FooBot/2.1 (+https://foo.example)", "/example/page.html", True),  # product token, any case
    ("FooBot/2.1 (+https://foo.example)", "/index.html", False),
    ("barbot", "/example/page.html", False),
    ("bazbot", "/example/page.html", False),
    ("barbot", "/example/other.html", True),  # its own group only: not the * rules
    ("bazbot", "/images/x.gif", True),
    ("quxbot", "/example/page.html", True),  # an empty group allows everything
    ("quxbot", "/x.gif", True),
    ("otherbot", "/example/page.html", False),  # * group
    ("otherbot", "/images/cat.gif", False),  # *.gif$
    ("otherbot", "/images/cat.gif?size=2", True),  # $ anchors the end
    ("otherbot", "/publications/", True),
    ("otherbot", "/publications/a.html", True),
    ("otherbot", "/about", True),
    ("otherbot", "/robots.txt", True),
])
def test_rfc_simple_example(agent: str, url: str, ok: bool) -> None:
    assert allowed(RFC_SIMPLE, agent, url) is ok


@pytest.mark.parametrize(("url", "ok"), [
    ("/example/page/", True),
    ("/example/page/other.gif", True),
    ("/example/page/disallowed.gif", False),
    ("/example/page/disallowed.gif?x=1", False),
])
def test_rfc_longest_match_wins(url: str, ok: bool) -> None:
    assert allowed(RFC_LONGEST, "foobot", url) is ok


def test_longest_match_not_first_match_and_allow_wins_ties() -> None:
    # urllib.robotparser applies the first matching line: it would disallow /shop/open.
    robots = "User-agent: *\nDisallow: /shop\nAllow: /shop/open\nDisallow: /tie\nAllow: /tie\n"
    assert allowed(robots, USER_AGENT, "/shop/open") is True
    assert allowed(robots, USER_AGENT, "/shop/closed") is False
    assert allowed(robots, USER_AGENT, "/tie/x") is True
    # the same length with a wildcard: allow still wins
    assert allowed("User-agent: *\nDisallow: /a*c\nAllow: /abc\n", USER_AGENT, "/abc") is True
    assert allowed("User-agent: *\nDisallow: /a*c\nAllow: /abc\n", USER_AGENT, "/axc") is False


def test_wildcards() -> None:
    robots = ("User-agent: *\nDisallow: /*/private/\nDisallow: /*.pdf$\nDisallow: /this/path/exactly$\n"
              "Disallow: /q?*sid=\nAllow: /this/*/ok\n")
    cases = {
        "/a/private/x": False, "/a/b/private/": False, "/private/": True,
        "/doc.pdf": False, "/doc.pdf?dl=1": True, "/doc.pdfx": True, "/x/y.PDF": True,
        "/this/path/exactly": False, "/this/path/exactly/more": True,
        "/q?a=1&sid=2": False, "/q?a=1": True,
        "/this/is/ok": True,
    }
    assert {u: allowed(robots, USER_AGENT, u) for u in cases} == cases


def test_percent_encoding_is_normalised_rfc_examples() -> None:
    # RFC 9309 §2.2.2: path → path to match
    assert url_path("https://h/foo/bar?baz=quz") == "/foo/bar?baz=quz"
    assert url_path("https://h/foo/bar/\u30c4") == "/foo/bar/%E3%83%84"
    assert url_path("https://h/foo/bar/%E3%83%84") == "/foo/bar/%E3%83%84"
    assert url_path("https://h/foo/bar/%e3%83%84") == "/foo/bar/%E3%83%84"
    assert url_path("https://h/foo/bar/%62%61%7A") == "/foo/bar/baz"
    assert url_path("https://h") == "/" and url_path("https://h/a#frag") == "/a"
    # rules are normalised the same way, whichever spelling either side uses
    assert allowed("User-agent: *\nDisallow: /foo/bar/\u30c4\n", USER_AGENT, "/foo/bar/%E3%83%84") is False
    assert allowed("User-agent: *\nDisallow: /foo/bar/%e3%83%84\n", USER_AGENT, "/foo/bar/\u30c4") is False
    assert allowed("User-agent: *\nDisallow: /foo/%62az\n", USER_AGENT, "/foo/baz") is False
    assert allowed("User-agent: *\nDisallow: /foo/baz\n", USER_AGENT, "/foo/%62%61%7A") is False
    assert allowed("User-agent: *\nDisallow: /a%2Fb\n", USER_AGENT, "/a/b") is True  # %2F is not /


def test_special_characters_matched_verbatim_when_percent_encoded() -> None:
    # RFC 9309 §2.2.3
    robots = "User-agent: *\nDisallow: /path/file-with-a-%2A.html\nDisallow: /path/foo-%24\n"
    assert allowed(robots, USER_AGENT, "/path/file-with-a-*.html") is False
    assert allowed(robots, USER_AGENT, "/path/file-with-a-b.html") is True
    assert allowed(robots, USER_AGENT, "/path/foo-$") is False
    assert allowed(robots, USER_AGENT, "/path/foo-") is True
    assert normalize_path("/a*b$", pattern=True) == "/a*b$" and normalize_path("/a*b$") == "/a%2Ab%24"


def test_group_selection_merging_and_star_fallback() -> None:
    robots = """\
# comment line
Sitemap: https://example.com/sitemap.xml
Disallow: /before-any-group
User-agent: *
Disallow: /star

User-agent: drsearch-corpus
Disallow: /one   # trailing comment
Crawl-delay: 5
User-agent: other
Disallow: /two

user-AGENT: DRSEARCH-CORPUS
disallow: /three
"""
    parsed = RobotsTxt.parse(robots)
    assert product_token(USER_AGENT) == "drsearch-corpus"
    mine = parsed.for_agent(USER_AGENT)
    assert [r.pattern for r in mine.rules] == ["/one", "/three"]  # both groups naming us, merged
    assert not mine.allowed("https://h/one") and not mine.allowed("https://h/three/x")
    assert mine.allowed("https://h/star") and mine.allowed("https://h/two")
    assert mine.allowed("https://h/before-any-group")
    other = parsed.for_agent("other/1.0")
    assert [r.pattern for r in other.rules] == ["/two"]
    star = parsed.for_agent("nobody")
    assert [r.pattern for r in star.rules] == ["/star"]
    assert RobotsTxt.parse("User-agent: foo\nDisallow: /\n").for_agent(USER_AGENT).allowed("https://h/x")


def test_empty_values_odd_lines_and_bom() -> None:
    robots = "\ufeffUser-agent: *\nDisallow:\nAllow:\nnonsense line\nDisallow: private\n"
    rules = RobotsTxt.parse(robots).for_agent(USER_AGENT)
    assert [(r.allow, r.pattern) for r in rules.rules] == [(False, "/private")]
    assert rules.allowed("https://h/public") and not rules.allowed("https://h/private/x")
    assert RobotsTxt.parse("").for_agent(USER_AGENT).allowed("https://h/anything")
    assert not RobotsTxt.parse("User-agent: *\r\nDisallow: /\r\n").for_agent(USER_AGENT).allowed("https://h/x")
    assert RobotsTxt.parse("User-agent: *\nDisallow: /\n").for_agent(USER_AGENT).allowed("https://h/robots.txt")


@pytest.mark.parametrize("status,decision", [(503, "robots_unavailable"), (429, "robots_unavailable"),
                                             (408, "robots_unavailable"), (404, None), (403, None)])
def test_a_transient_robots_answer_disallows_for_this_run(status: int, decision: str | None) -> None:
    """5xx, 429 and 408 (drsearch.contract.retry's RETRY_STATUSES) say nothing about the rules:
    unavailable, retried on the next run; another 4xx means no robots.txt (RFC 9309 §2.3.1.3)."""
    import asyncio

    import httpx

    from drsearch.corpus.robots import RobotsCache

    async def decide() -> str | None:
        transport = httpx.MockTransport(lambda r: httpx.Response(status))
        async with httpx.AsyncClient(transport=transport) as client:
            return await RobotsCache(client, USER_AGENT).decision("https://site.test/page")

    assert asyncio.run(decide()) == decision
