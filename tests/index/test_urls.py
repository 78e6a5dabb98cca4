from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.provisional import urls

from drsearch.index import canonicalize_url


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("HTTPS://Example.COM/a/b", "https://example.com/a/b"),
        ("https://example.com:443/a", "https://example.com/a"),
        ("http://example.com:80/a", "http://example.com/a"),
        ("https://example.com/a/", "https://example.com/a"),
        ("https://example.com", "https://example.com/"),
        ("https://example.com/a#section-2", "https://example.com/a"),
        ("https://example.com/a?utm_source=x&id=3&fbclid=y", "https://example.com/a?id=3"),
        ("https://example.com/a?b=2&a=1", "https://example.com/a?a=1&b=2"),
        ("https://example.com/a/./b/../c", "https://example.com/a/c"),
        ("https://example.com/%7euser/%e2%82%ac", "https://example.com/~user/%E2%82%AC"),
        ("https://example.com./x", "https://example.com/x"),
        ("  https://example.com/x  ", "https://example.com/x"),
    ],
)
def test_same_address_same_canonical_form(a: str, b: str) -> None:
    assert canonicalize_url(a) == canonicalize_url(b) == b


def test_different_addresses_stay_different() -> None:
    assert canonicalize_url("https://example.com/a") != canonicalize_url("http://example.com/a")
    assert canonicalize_url("https://example.com:8443/a") != canonicalize_url("https://example.com/a")
    assert canonicalize_url("https://example.com/a?id=1") != canonicalize_url("https://example.com/a?id=2")
    assert canonicalize_url("https://example.com/A") != canonicalize_url("https://example.com/a")


def test_non_http_and_garbage_do_not_raise() -> None:
    assert canonicalize_url("cran-1") == "cran-1"
    assert canonicalize_url("mailto:x@y.z") == "mailto:x@y.z"
    assert canonicalize_url("http://[::1:bad") == "http://[::1:bad"
    assert canonicalize_url("") == ""


@given(urls())
def test_idempotent(url: str) -> None:
    once = canonicalize_url(url)
    assert canonicalize_url(once) == once


@given(urls(), st.sampled_from(["#frag", "#", ""]))
def test_host_case_and_fragment_do_not_matter(url: str, frag: str) -> None:
    scheme, rest = url.split("://", 1)
    host, sep, path = rest.partition("/")
    variant = f"{scheme.upper()}://{host.upper()}{sep}{path.split('#')[0]}{frag}"
    assert canonicalize_url(variant) == canonicalize_url(url)


@given(st.text(max_size=200))
def test_never_raises(text: str) -> None:
    assert isinstance(canonicalize_url(text), str)


@pytest.mark.parametrize("url", [
    "passage:17", "passage:a b#frag", "Passage:X#", "mailto:someone@example.org", "ftp://Host/a/../b#x",
    "passage://[broken", "urn:isbn:0451450523", "HTTP://Example.com/a", "https:", "http:x",
    "pass1ge:x", "pass-age:x", "ünï:x", "passage:\tx\ny", "\x01passage:x", " passage:x ",
])
def test_the_shortcut_for_other_schemes_gives_what_parsing_gives(url: str) -> None:
    """A URL whose scheme is letters other than http(s) is answered without parsing it: the
    same string as parsing it (the one path every URL took before)."""
    from drsearch.index.urls import _parsed

    assert canonicalize_url(url) == _parsed(url.strip())


@given(st.text(alphabet=st.sampled_from("pasgeHTPShtp:/#[]@%? \t\nx1é"), max_size=24))
def test_the_shortcut_agrees_with_parsing_on_any_text(text: str) -> None:
    from drsearch.index.urls import _parsed

    assert canonicalize_url(text) == _parsed(text.strip())
