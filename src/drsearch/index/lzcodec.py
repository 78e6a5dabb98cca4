"""drlz: drsearch's LZ block codec for schema version 4's document texts (``doc_texts``).

Why not zlib: a search's complete hits cut each hit's text (about 5 KB) out of its document's
compressed text, and zlib's inflate made that 1.7-2.1x slower than reading version 2's stored
chunk text. An LZ decoder (byte-oriented literals and matches, no entropy coding) makes the same
bytes several times faster, at some disk (docs/ENGINE.md, "Version 4").

The format is ``_k_lz.h``'s (the C kernel's writer and reader, what the engine uses); this module
is its reference in Python, byte for byte (the tests compare the two), used where the kernel is
not built:

- byte 0 is :data:`MAGIC` (0xD1); a zlib stream's first byte has 8 in its low nibble, so a BLOB
  says which codec wrote it (:func:`is_lz`);
- then the text's length in bytes (unsigned LEB128);
- then sequences: a token (high nibble: literal count L, low nibble: match length M - 4; 15 in
  either adds the bytes that follow until one is not 255), L literal bytes, a 2-byte
  little-endian offset (0: no match, and M must be 0) and, when the offset is not 0, M bytes
  copied from that far back in the output (the copy may overlap what it writes);
- then, last, the text's CRC-32 (``zlib.crc32``, 4 bytes little-endian): a document read whole
  (:func:`unpack`: ``open``, ``validate --deep``) is checked against it, as zlib's own checksum
  checked a version-2 text. A chunk's span is not (it is checked by FTS5's integrity-check,
  which compares every chunk's text with what it indexed). The kernel writes and reads the
  rest (``native.lz_pack``, ``lz_unpack``); this module adds and checks the checksum.

A block starts at each chunk's start byte: no match reaches back past its block's start and no
sequence crosses its end, so decoding from a block's first token (:func:`pack`'s ``zstarts``)
gives the text from there on. The writer finds matches by hash chains (every earlier position
of the block with the same 4-byte hash, 2**15 hashes, the 8 nearest tried, the longest taken),
takes a match unless the next position's is longer (one step of lazy matching), and extends it
backwards into the pending literals. Deterministic: the same bytes and starts give the same
BLOB.
"""

from __future__ import annotations

import zlib
from collections.abc import Sequence

from . import native as kernel

MAGIC = 0xD1
# The first byte of a document text stored as its words joined by single spaces and the
# whitespace that differed (chunktext.pack_joined): the same drlz stream after it. What the
# stream holds differs, not how it is read: both bytes are drlz to every reader here.
MAGIC_JOINED = 0xD2
MAGICS = (MAGIC, MAGIC_JOINED)
_MIN_MATCH = 4
_MAX_OFFSET = 65535
_HASH_BITS = 15
_CHAIN_DEPTH = 8
_MIN_TAKEN = 6  # the shortest match the writer takes (_k_lz.h's LZ_MIN_TAKEN: why)
# No stream of z bytes makes more than 256 * z + 256 bytes (a length byte adds at most 255): a
# length past that is damage, refused before anything is allocated (_k_lz.h's LZ_MAX_RATIO).
_MAX_RATIO = 256


def is_lz(blob: bytes | memoryview) -> bool:
    """Whether ``blob`` is a drlz text (else it is a zlib stream, as version 2 stores)."""
    return len(blob) > 0 and blob[0] in MAGICS


def pack(data: bytes, starts: Sequence[int] = (), magic: int = MAGIC) -> tuple[bytes, list[int]]:
    """``data`` as drlz with a block starting at each byte offset of ``starts`` (ascending,
    each < ``len(data)``, or 0), and each start's offset in the result (the ``zstart`` that
    :func:`span` decodes from), the checksum last. The kernel's writer where it is built, else
    :func:`pack_reference` (the same bytes). Raises ValueError for starts that are not
    ascending within the data. ``magic``: the first byte (one of :data:`MAGICS`)."""
    if magic not in MAGICS:
        raise ValueError(f"lz_pack: {magic:#x} is not a drlz first byte")
    blob, zstarts = kernel.lz_pack(data, starts) if kernel.available() else pack_reference(data, starts)
    head = b"" if magic == MAGIC else bytes([magic])
    return head + memoryview(blob)[len(head):] + zlib.crc32(data).to_bytes(4, "little"), zstarts


def unpack(blob: bytes) -> bytes:
    """The bytes of a drlz BLOB (every byte of it read, the checksum checked). Raises
    ValueError for a BLOB that is not one (damaged: lengths or offsets out of range, bytes
    after the end, another checksum)."""
    body = memoryview(blob)[:-4]
    data = kernel.lz_unpack(body) if kernel.available() else unpack_reference(body)
    if len(blob) < 4 or zlib.crc32(data) != int.from_bytes(blob[-4:], "little"):
        raise ValueError("lz_unpack: the text's checksum does not match (damaged)")
    return data


def span(blob: bytes | memoryview, zstart: int, want: int) -> bytes:
    """The first ``want`` bytes decoded from offset ``zstart`` of a drlz BLOB (a block's first
    token). Raises ValueError for bytes that do not make them."""
    if kernel.available():
        return kernel.lz_unpack(blob, zstart, want)
    return span_reference(blob, zstart, want)


def span_reference(blob: bytes | memoryview, zstart: int, want: int) -> bytes:
    """:func:`span` in Python."""
    head, _ = _header(blob)
    if not head <= zstart <= len(blob) or want < 0:
        raise ValueError("lz_unpack: span is not within the compressed text")
    if want // _MAX_RATIO > len(blob) - zstart:
        raise ValueError("lz_unpack: compressed text ends early")
    return _decode(blob, zstart, want)[0]


# -- the reference (pure Python) --------------------------------------------------------------

def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        out.append((n & 0x7F) | (0x80 if n > 0x7F else 0))
        n >>= 7
        if not n:
            return bytes(out)


def _ext(out: bytearray, rest: int) -> None:
    while rest >= 255:
        out.append(255)
        rest -= 255
    out.append(rest)


def _seq(out: bytearray, lit: bytes, off: int, m: int) -> None:
    mc = m - _MIN_MATCH if off else 0
    out.append((min(len(lit), 15) << 4) | min(mc, 15))
    if len(lit) >= 15:
        _ext(out, len(lit) - 15)
    out += lit
    out += off.to_bytes(2, "little")
    if off and mc >= 15:
        _ext(out, mc - 15)


class _Chains:
    """The writer's match finder (``_k_lz.h``'s LzChains): per 4-byte hash the last position
    seen (``head``, position + 1), per position the one before it with the same hash."""

    def __init__(self, src: bytes) -> None:
        self.src = src
        self.head = [0] * (1 << _HASH_BITS)
        self.prev = [0] * (len(src) + 1)
        self.b0 = self.b1 = self.ins = 0

    def best(self, p: int) -> tuple[int, int]:
        """(length, position) of the longest match for ``p`` among the nearest candidates of
        its block (length 0: none); enters positions up to ``p`` first."""
        src, head, prev = self.src, self.head, self.prev
        for q in range(self.ins, p + 1):
            h = _hash(src, q)
            prev[q] = head[h]
            head[h] = q + 1
        self.ins = p + 1
        best = at = 0
        c1 = prev[p]
        word = src[p:p + 4]
        for _ in range(_CHAIN_DEPTH):
            if not c1:
                break
            cand = c1 - 1
            if cand < self.b0 or p - cand > _MAX_OFFSET:
                break
            if src[cand:cand + 4] == word and (not best or (p + best < self.b1
                                                            and src[cand + best] == src[p + best])):
                n = _MIN_MATCH
                while p + n < self.b1 and src[cand + n] == src[p + n]:
                    n += 1
                if n > best:
                    best, at = n, cand
            c1 = prev[cand]
        return (best, at) if best >= _MIN_TAKEN else (0, at)


def _hash(src: bytes, q: int) -> int:
    return ((int.from_bytes(src[q:q + 4], "little") * 2654435761) & 0xFFFFFFFF) >> (32 - _HASH_BITS)


def _block(ch: _Chains, b0: int, b1: int, out: bytearray) -> None:
    src = ch.src
    ch.b0, ch.b1, ch.ins = b0, b1, b0
    anchor = i = b0
    while i + _MIN_MATCH <= b1:
        m, c = ch.best(i)
        if not m:
            i += 1
            continue
        if i + 1 + _MIN_MATCH <= b1:
            m2, c2 = ch.best(i + 1)
            if m2 > m:
                i, m, c = i + 1, m2, c2
        s = i
        while s > anchor and c > b0 and src[s - 1] == src[c - 1]:
            s, c, m = s - 1, c - 1, m + 1
        _seq(out, src[anchor:s], s - c, m)
        i = anchor = s + m
    if anchor < b1:
        _seq(out, src[anchor:b1], 0, 0)


def pack_reference(data: bytes, starts: Sequence[int] = ()) -> tuple[bytes, list[int]]:
    """``native.lz_pack`` in Python (:func:`pack` without the checksum; slow: for a machine
    without the kernel, and the tests)."""
    n = len(data)
    out = bytearray([MAGIC])
    out += _varint(n)
    chains = _Chains(data)
    zstarts: list[int] = []
    at = prev = 0
    for k, start in enumerate(starts):
        if start < 0 or start > n or (k and start < prev) or (start == n and n):
            raise ValueError(f"lz_pack: start {start} is not ascending within {n} bytes")
        prev = start
        if start > at:
            _block(chains, at, start, out)
            at = start
        zstarts.append(len(out))
    if n > at:
        _block(chains, at, n, out)
    return bytes(out), zstarts


def _header(blob: bytes | memoryview) -> tuple[int, int]:
    """(the first token's offset, the text's length). Raises ValueError."""
    if len(blob) < 2 or blob[0] not in MAGICS:
        raise ValueError("lz_unpack: not a drlz text")
    n = shift = 0
    for i in range(1, min(len(blob), 11)):
        n |= (blob[i] & 0x7F) << shift
        if not blob[i] & 0x80:
            if n // _MAX_RATIO > len(blob):
                break
            return i + 1, n
        shift += 7
    raise ValueError("lz_unpack: drlz header is damaged")


def _decode(z: bytes | memoryview, ip: int, want: int) -> tuple[bytes, int]:
    """``want`` bytes decoded from ``z[ip:]`` and the offset just past what was read."""
    out = bytearray()
    zlen = len(z)

    def fail(why: str) -> ValueError:
        return ValueError(f"lz_unpack: {why}")

    def ext(n: int) -> int:
        nonlocal ip
        while True:
            if ip >= zlen:
                raise fail("compressed text ends early")
            b = z[ip]
            ip += 1
            n += b
            if b != 255:
                return n

    while len(out) < want:
        if ip >= zlen:
            raise fail("compressed text ends early")
        tok = z[ip]
        ip += 1
        lit = tok >> 4
        if lit == 15:
            lit = ext(lit)
        if lit > zlen - ip:
            raise fail("compressed text ends early")
        out += z[ip:ip + min(lit, want - len(out))]
        ip += lit
        if len(out) >= want:
            if not tok & 15 and zlen - ip >= 2 and not z[ip] and not z[ip + 1]:
                ip += 2  # the text's last sequence: its zero offset read too
            break
        if zlen - ip < 2:
            raise fail("compressed text ends early")
        off = z[ip] | (z[ip + 1] << 8)
        ip += 2
        m = tok & 15
        if not off:
            if m:
                raise fail("a sequence without a match has a match length")
            continue
        if m == 15:
            m = ext(m)
        m = min(m + _MIN_MATCH, want - len(out))
        if off > len(out):
            raise fail("a match reaches back past its block's start")
        for _ in range(m):  # (overlapping copies repeat what they write)
            out.append(out[-off])
    return bytes(out), ip


def unpack_reference(blob: bytes | memoryview) -> bytes:
    """``native.lz_unpack`` in Python (:func:`unpack` without the checksum)."""
    head, n = _header(blob)
    out, end = _decode(blob, head, n)
    if end != len(blob):
        raise ValueError("lz_unpack: bytes after the text's end")
    return out


__all__ = ["MAGIC", "MAGICS", "MAGIC_JOINED", "is_lz",
           "pack", "pack_reference", "span", "span_reference", "unpack", "unpack_reference"]
