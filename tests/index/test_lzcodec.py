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
