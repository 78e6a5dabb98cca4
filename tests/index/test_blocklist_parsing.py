"""Blocklist lines: a docid is blocked exactly as ``open --docid`` names it, or the line is refused.

A line that looks right but holds a BOM, a zero-width or no-break space, a control
character, or quotes/commas from a pasted JSON or CSV list would otherwise "block" a
docid no document has, and serve the document it meant.
"""

from __future__ import annotations

import io
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from drsearch.contract import BlocklistError
from drsearch.index import BlockList, build
from drsearch.tools.cli import main

DOCIDS = ["d-0123456789abcdef", "web-042bb7b5fedab6ea", "doc,with,commas", "x"]
DECORATIONS = [" ", "\t", "\ufeff", "\u200b", "\u200e", "\u2060", "\u00a0", "\u3000", "\u2028", "\x00", "\x0b",
               "\x1c", "\x85", '"', "'", ",", ";", "`", "\u201c", "\u2019", "[", "]"]


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("bl") / "c.sqlite3"
    build([{"docid": d, "url": f"https://example.com/{i}", "title": d, "text": f"page number {i} about ants"}
           for i, d in enumerate(DOCIDS)], path)
    return path


def opens(corpus: Path, docid: str, blocklist: Path | None = None) -> bool:
    """Whether ``drsearch open --docid DOCID`` finds the document (exit 0) or not (exit 1)."""
    extra = [] if blocklist is None else ["--blocked-docids", str(blocklist)]
    # --docid=VALUE: a docid may start with "-" (argparse would read "--docid -:" as two options)
    code = main(["open", "--database", str(corpus), f"--docid={docid}", *extra], io.StringIO())
    assert code in (0, 1)
    return code == 0


def test_a_leading_bom_is_dropped() -> None:
    assert BlockList.from_bytes(b"\xef\xbb\xbfd-0123456789abcdef\nx\n").docids == {"d-0123456789abcdef", "x"}
    assert BlockList.from_bytes(b"\xef\xbb\xbf# comment\r\nx\r\n").docids == {"x"}


@pytest.mark.parametrize("line", [
    "d-0123456789abcdef\u200b", "\u200bd-0123456789abcdef", "d-01234\u200d56789abcdef", "x\u00a0", "\u00a0x",
    "\ufeffx", "x\u2060", "x\u200e", "\u3000x", "x\x0b", "x\x1c", "x\x85", "x\u2028", "x\x00",
    '"d-0123456789abcdef"', "'x'", "x,", '"x",', "[x]", "\u201cx\u201d", "`x`", "x;",
])
def test_invisible_characters_and_wrappers_are_refused_with_file_and_line(line: str) -> None:
    data = f"# header\nd-0123456789abcdef\n{line}\n".encode()
    with pytest.raises(BlocklistError, match=r"^blocked\.txt:3: malformed docid"):
        BlockList.from_bytes(data, "blocked.txt")


def test_spaces_and_tabs_around_a_docid_and_inner_commas_are_fine() -> None:
    assert BlockList.from_bytes(b"  x\t\n\tdoc,with,commas \n\n# c\n").docids == {"x", "doc,with,commas"}


def test_cli_refuses_a_bom_in_the_middle_with_exit_2(corpus: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    f = tmp_path / "b.txt"
    f.write_text("x\n\ufeffd-0123456789abcdef\n", encoding="utf-8")
    assert main(["search", "--database", str(corpus), "--blocked-docids", str(f), "ants"], io.StringIO()) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{f}:2: malformed docid" in err and "U+FEFF" in err


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(docid=st.sampled_from(DOCIDS), before=st.lists(st.sampled_from(DECORATIONS), max_size=3),
       after=st.lists(st.sampled_from(DECORATIONS), max_size=3), bom=st.booleans())
def test_an_accepted_line_blocks_exactly_the_docid_open_finds(corpus: Path, tmp_path: Path, docid: str,
                                                               before: list[str], after: list[str],
                                                               bom: bool) -> None:
    line = "".join(before) + docid + "".join(after)
    f = tmp_path / "blocked.txt"
    f.write_bytes((b"\xef\xbb\xbf" if bom else b"") + f"{line}\n".encode())
    try:
        parsed = BlockList.from_file(f)
    except BlocklistError as e:
        assert f"{f}:1: malformed docid" in e.message
        assert set(before + after) - {" ", "\t"}  # only a real decoration is refused
        return
    # A U+FEFF decoration that lands at the very start of the file is that file's BOM.
    as_read = line[1:] if not bom and line.startswith("\ufeff") else line
    assert parsed.docids == {as_read.strip(" \t")}
    assert parsed.docids == {docid}  # never a near-miss that matches no document
    assert not opens(corpus, docid, f)
    assert all(opens(corpus, other, f) for other in DOCIDS if other != docid)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(line=st.text(st.characters(codec="utf-8", exclude_characters="\n"), min_size=1, max_size=12))
def test_any_accepted_line_names_the_docid_open_docid_finds(tmp_path_factory: pytest.TempPathFactory,
                                                            line: str) -> None:
    try:
        parsed = BlockList.from_bytes(f"{line}\n".encode())
    except BlocklistError:
        return
    item = line.removesuffix("\r").strip(" \t")
    if not item or item.startswith("#"):
        assert parsed.docids == frozenset()
        return
    assert parsed.docids == {item}
    assert not any(unicodedata.category(c) in ("Cc", "Cf", "Zs", "Zl", "Zp") for c in item)
    root = tmp_path_factory.mktemp("any")
    corpus, f = root / "c.sqlite3", root / "b.txt"
    build([{"docid": item, "url": "https://example.com/1", "title": "t", "text": "ants"},
           {"docid": "other", "url": "https://example.com/2", "title": "t", "text": "bees"}], corpus)
    f.write_text(f"{line}\n", encoding="utf-8")
    assert opens(corpus, item) and not opens(corpus, item, f) and opens(corpus, "other", f)
