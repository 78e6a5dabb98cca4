"""drlz, version 4's document text codec (``_k_lz.h`` in the kernel, ``lzcodec.py`` its Python
reference): the two write the same bytes and read them back exactly, whole and from each
block; damaged bytes give ValueError in both, never a read or write outside the buffers (the
kernel's output is checked to be exactly as long as asked, and equal to the reference's)."""

from __future__ import annotations

import contextlib
import random
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from drsearch.index import chunktext, lzcodec, native
from drsearch.index.chunking import chunk_spans

from ..helpers import cranfield_docs, sample_docs

needs_kernel = pytest.mark.skipif(not native.available(), reason="C kernel not built")


def _texts_like(rng: random.Random, n: int) -> bytes:
    """Text with repeats near and far (matches of every length and offset), runs of one byte
    (overlapping copies) and random bytes (long literal runs)."""
    words = [bytes(rng.randrange(97, 123) for _ in range(rng.randint(1, 9))) for _ in range(40)]
    out = bytearray()
    while len(out) < n:
        kind = rng.random()
        if kind < 0.5:
            out += rng.choice(words) + b" "
        elif kind < 0.7 and out:
            a = rng.randrange(len(out))
            out += out[a:a + rng.randint(1, 400)]
        elif kind < 0.8:
            out += bytes([rng.randrange(256)]) * rng.randint(1, 300)
        else:
            out += rng.randbytes(rng.randint(1, 300))
    return bytes(out[:n])


def _starts(rng: random.Random, n: int) -> list[int]:
    if n < 2:
        return []
    k = rng.randint(0, 12)
    return sorted(rng.choice([0, *(rng.randrange(1, n) for _ in range(k))]) for _ in range(k))


def _check_round_trip(data: bytes, starts: list[int], reference: bool = True) -> None:
    blob, zstarts = lzcodec.pack(data, starts)
    assert blob[0] == lzcodec.MAGIC and lzcodec.is_lz(blob)
    assert len(zstarts) == len(starts)
    assert lzcodec.unpack(blob) == data
    if reference:
        assert lzcodec.pack_reference(data, starts) == (blob[:-4], zstarts)  # (+ the checksum)
        assert lzcodec.unpack_reference(blob[:-4]) == data
    for start, z in zip(starts, zstarts, strict=True):
        for want in {0, 1, len(data) - start, (len(data) - start) // 2}:
            assert lzcodec.span(blob, z, want) == data[start:start + want]
            assert lzcodec.span_reference(blob, z, want) == data[start:start + want]


@needs_kernel
def test_the_kernel_writes_the_references_bytes_and_both_read_them_back() -> None:
    rng = random.Random(7)
    for n in (0, 1, 3, 4, 5, 17, 300, 5000, 70_000, 140_000):
        data = _texts_like(rng, n)
        _check_round_trip(data, _starts(rng, n))
        _check_round_trip(data, [])


@needs_kernel
@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=3000), st.lists(st.integers(0, 2999), max_size=8), st.integers(0, 40))
def test_round_trip_property(data: bytes, cuts: list[int], repeat: int) -> None:
    data = data * (1 + repeat % 5)  # (repeats: matches across the copies)
    starts = sorted(c for c in cuts if c < len(data))
    _check_round_trip(data, starts)


@needs_kernel
def test_real_texts_round_trip_from_every_chunk_start() -> None:
    """The sample pages and Cranfield, blocked where their 40-word chunks start (the build's
    own cut): the whole text and every chunk's span back, the kernel as the reference."""
    docs = [d["text"] for d in sample_docs()] + [d["text"] for d in cranfield_docs()[::7]]
    for i, text in enumerate(docs):
        n = len(text.split())
        spans = [(s.start, s.end) for s in chunk_spans(n, 40, 30)] if n else []
        byte_spans = chunktext.byte_spans(text, spans)
        starts = [a for a, _ in byte_spans]
        packed, zstarts = chunktext.pack_text(text, starts, lz=True)
        assert chunktext.unpack_text(packed) == text
        assert [chunktext.chunk_text(packed, z, a, b) for z, (a, b) in zip(zstarts, byte_spans, strict=True)] \
            == [" ".join(text.split()[s:e]) for s, e in spans]
        if i % 20 == 0:  # (the reference writer is slow: every 20th)
            assert lzcodec.pack_reference(text.encode(), starts) == (packed[:-4], zstarts)


@needs_kernel
def test_damaged_bytes_are_refused_alike_never_read_past() -> None:
    """Fuzz: bytes flipped, cut short, lengthened or random. The kernel and the reference
    agree: the same bytes (exactly as many as asked) or ValueError."""
    rng = random.Random(11)
    for trial in range(2500):
        data = _texts_like(rng, rng.randint(1, 3000))
        starts = _starts(rng, len(data))
        blob = bytearray(lzcodec.pack(data, starts)[0][:-4])  # (the kernel's part: no checksum)
        how = trial % 4
        if how == 0:
            for _ in range(rng.randint(1, 4)):
                blob[rng.randrange(len(blob))] ^= 1 << rng.randrange(8)
        elif how == 1:
            del blob[rng.randrange(1, len(blob)):]
        elif how == 2:
            blob += rng.randbytes(rng.randint(1, 20))
        else:
            blob[1:] = rng.randbytes(rng.randint(0, 200))
        damaged = bytes(blob)
        zstart, want = rng.randrange(len(damaged) + 2), rng.randint(0, 5000)
        for args in ((), (zstart, want)):
            got = []
            for fn in (native.lz_unpack, _reference_unpack):
                try:
                    out = fn(damaged, *args)
                except ValueError:
                    got.append("ValueError")
                else:
                    got.append(out)
                    assert len(out) == (args[1] if args else len(out))
            assert got[0] == got[1], (trial, args)


def _reference_unpack(blob: bytes, zstart: int = -1, want: int = -1) -> bytes:
    return lzcodec.unpack_reference(blob) if zstart < 0 else lzcodec.span_reference(blob, zstart, want)


def test_a_blob_says_its_codec() -> None:
    """zlib's first byte has 8 (deflate) in its low nibble; drlz's is 0xD1: the readers tell
    a version-2 (or earlier version-4) zlib text from a drlz one by it."""
    for level in range(10):
        assert not lzcodec.is_lz(zlib.compress(b"text", level))
    packed, _ = chunktext.pack_text("some text", [5], lz=True)
    assert lzcodec.is_lz(packed) and chunktext.unpack_text(packed) == "some text"
    assert chunktext.unpack_text(zlib.compress(b"some text")) == "some text"


def test_a_document_read_whole_is_checked_against_its_checksum() -> None:
    """A flipped bit anywhere makes the whole text unreadable (ValueError, as zlib's checksum
    did) or, where it still decodes to the same text (an offset to equal bytes), reads it: a
    literal whitespace byte made another (which FTS5's check of the chunks cannot see) too."""
    data = b"one two\nthree four " * 50
    blob, _ = lzcodec.pack(data, [8])
    assert lzcodec.unpack(blob) == data
    for at in range(1, len(blob)):
        for bit in range(8):
            bad = bytearray(blob)
            bad[at] ^= 1 << bit
            with contextlib.suppress(ValueError):
                assert lzcodec.unpack(bytes(bad)) == data
    bad = bytearray(blob)
    bad[blob.index(b"\n")] = 0x0B  # (a literal newline made a vertical tab: the same words)
    with pytest.raises(ValueError, match="checksum"):
        lzcodec.unpack(bytes(bad))
    with pytest.raises(ValueError, match="checksum"):
        lzcodec.unpack(blob[:-4] + b"\0\0\0\0")


def test_the_reference_alone_reads_and_writes_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without the kernel (no C compiler at install) pack/unpack/span take the reference."""
    data = _texts_like(random.Random(3), 4000)
    with_kernel = lzcodec.pack(data, [1000, 2500])
    monkeypatch.setattr(native, "available", lambda: False)
    assert lzcodec.pack(data, [1000, 2500]) == with_kernel
    blob, zstarts = with_kernel
    assert lzcodec.unpack(blob) == data
    assert lzcodec.span(blob, zstarts[1], 100) == data[2500:2600]
    with pytest.raises(ValueError, match="not ascending"):
        lzcodec.pack(data, [5, 3])


# -- the joined form (version 4's document texts: chunktext.pack_joined) ----------------------

# every character str.isspace() takes (str.split()'s whitespace), and some that it does not
_SPACES = [chr(c) for c in range(0x110000) if chr(c).isspace()]
_NOT_SPACES = ["\u200b", "\u180e", "\ufeff", "\x00", "\x7f", "\u00a1", "\u2060"]


def _spaced_text(rng: random.Random) -> str:
    """Words (ASCII, Latin-1, CJK, astral, characters that look like space but are not)
    between runs of every whitespace: one ' ' mostly, else 1-3 of any, leading and trailing
    runs or none, and texts that are whitespace only or empty."""
    words = ["a", "word", "naïve", "日本語", "𝔘𝔫", *_NOT_SPACES, "x\u200by", "tail-end"]
    parts: list[str] = []
    if rng.random() < 0.4:
        parts.append("".join(rng.choice(_SPACES) for _ in range(rng.randint(1, 3))))
    for _ in range(rng.randint(0, 40)):
        parts.append(rng.choice(words))
        parts.append(" " if rng.random() < 0.6 else "".join(rng.choice(_SPACES) for _ in range(rng.randint(1, 3))))
    if parts and rng.random() < 0.5:
        parts.pop()
    return "".join(parts)


def _word_spans(rng: random.Random, n: int) -> list[tuple[int, int]]:
    spans, s = [], 0
    while s < n:
        e = min(n, s + rng.randint(1, 6))
        spans.append((s, e))
        s = e - rng.randint(0, min(2, e - s - 1)) if e < n else n
    return spans


def test_no_whitespace_lies_beyond_three_utf8_bytes() -> None:
    """The kernel's joiner (``lz_ws_at``) looks for whitespace in 1- to 3-byte UTF-8 characters
    only, and the reference's regex ``\\s`` is str.isspace(): true of this Python's Unicode."""
    assert _SPACES and max(map(ord, _SPACES)) <= 0xFFFF
    for c in _SPACES:
        assert chunktext.join_reference(f"a{c}b")[0][:3] == b"a b"


@needs_kernel
def test_the_kernel_joins_a_text_as_the_reference_does() -> None:
    """``native.lz_join`` and ``chunktext.join_reference``: the same bytes and spans, on texts
    with every kind of whitespace and on real pages (the joined words are str.split()'s)."""
    rng = random.Random(23)
    texts = [_spaced_text(rng) for _ in range(3000)] + ["", " ", "\n\n", "a", " a ", "a\u3000"]
    texts += [d["text"] for d in sample_docs()] + [d["text"] for d in cranfield_docs()[::9]]
    for text in texts:
        n = len(text.split())
        byte_spans = chunktext.byte_spans(text, _word_spans(rng, n)) if n else []
        data, spans = native.lz_join(text.encode("utf-8"), byte_spans)
        assert (data, spans) == chunktext.join_reference(text, byte_spans), repr(text)
        e_len = int.from_bytes(data[-4:], "little")
        assert data[:len(data) - 4 - e_len] == " ".join(text.split()).encode("utf-8")
    for bad in ([(0, 9)], [(2, 1)], [(-1, 1)]):
        for fn in (lambda s: native.lz_join(b"ab cd", s), lambda s: chunktext.join_reference("ab cd", s)):
            with pytest.raises(ValueError, match="not within"):
                fn(bad)


@needs_kernel
def test_a_joined_text_round_trips_and_each_span_is_its_chunks_text(monkeypatch: pytest.MonkeyPatch) -> None:
    """``pack_joined``: the document text back exactly (``unpack_text``), and each chunk's
    span decoded from its ``zstart`` is its text as it is (``" ".join(words[s:e])``, nothing
    to collapse), with the kernel and with the Python reference alone (the same BLOB)."""
    rng = random.Random(29)
    texts = [_spaced_text(rng) for _ in range(400)] + [d["text"] for d in sample_docs()[::3]]
    for i, text in enumerate(texts):
        words = text.split()
        spans = _word_spans(rng, len(words))
        byte_spans = chunktext.byte_spans(text, spans) if words else []
        blob, zstarts, joined = chunktext.pack_joined(text, byte_spans)
        assert blob[0] == lzcodec.MAGIC_JOINED and lzcodec.is_lz(blob)
        assert chunktext.unpack_text(blob) == text
        for (s, e), z, (a, b) in zip(spans, zstarts, joined, strict=True):
            assert lzcodec.span(blob, z, b - a) == " ".join(words[s:e]).encode("utf-8")
            assert chunktext.chunk_text(blob, z, a, b) == " ".join(words[s:e])
        if i % 10 == 0:
            with monkeypatch.context() as m:
                m.setattr(native, "available", lambda: False)
                assert chunktext.pack_joined(text, byte_spans) == (blob, zstarts, joined)
                assert chunktext.unpack_text(blob) == text


def test_a_damaged_whitespace_record_is_refused() -> None:
    """The whitespace record (E) is checked as it is applied: a run that does not replace a ' '
    of the joined words, lies past them, or a length past the record is a ValueError (the
    checksum refuses such bytes first; this holds where it does not, a reader's last guard)."""
    data, _ = chunktext.join_reference("a\n\nb c\td")  # J "a b c d", E: lead, trail, 2 runs
    assert chunktext._unjoin(data) == b"a\n\nb c\td"
    e_at = len(data) - 4 - int.from_bytes(data[-4:], "little")
    assert data[e_at:-4] == b"\x00\x00\x01\x02\n\n\x03\x01\t"
    for bad in (b"\x00\x00\x02\x02\n\n",  # the run's ' ' at J[2] is 'b'
                b"\x00\x00\x09\x01\n",  # past J
                b"\x00\x00\x01\x09\n",  # a run longer than the record
                b"\x00\x00\x01\x00",  # an empty run
                b"\x00\x05",  # a lead longer than the record
                b"\x00\x00\x01\x80"):  # a varint cut short
        damaged = data[:e_at] + bad + len(bad).to_bytes(4, "little")
        with pytest.raises(ValueError, match="whitespace record"):
            chunktext._unjoin(damaged)
    with pytest.raises(ValueError, match="whitespace record"):
        chunktext._unjoin(data[:e_at] + b"\xff\xff\x00\x00")


def test_the_writer_takes_no_match_shorter_than_six_bytes() -> None:
    """Matches of 4 and 5 bytes are not taken (a sequence each, for a byte or two saved): a text
    whose only repeats are 5 bytes long is all literals, one of 6 bytes is a match."""
    five = b"abcde1abcde2"
    six = b"abcdef1abcdef2"
    for pack in (lzcodec.pack_reference, *([native.lz_pack] if native.available() else [])):
        assert len(pack(five, [])[0]) == 1 + 1 + 1 + len(five) + 2  # magic, length, token, literals, offset 0
        assert len(pack(six, [])[0]) < 1 + 1 + 1 + len(six) + 2
