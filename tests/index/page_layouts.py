"""Page layouts and b-tree damage for the tests of readers that walk a SQLite file's pages
(the kernel's page reader and the term-row, paged-list and paged-field readers): the same rows
laid out again with other page sizes or reserved bytes, and the pointers such a reader follows
overwritten."""

from __future__ import annotations

import ctypes
import random
from pathlib import Path

import apsw


def rewrite(src: Path, dst: Path, *, page_size: int | None = None, reserve: int | None = None) -> Path:
    """A copy of ``src`` laid out again by VACUUM INTO with another page size and/or reserved
    bytes per page (the same rows)."""
    conn = apsw.Connection(str(src))
    if reserve is not None:  # file_control passes a pointer: to a C int holding the count
        value = ctypes.c_int(reserve)
        conn.file_control("main", apsw.SQLITE_FCNTL_RESERVE_BYTES, ctypes.addressof(value))
    if page_size is not None:
        conn.execute(f"PRAGMA page_size={page_size}")
    conn.execute("VACUUM INTO ?", (str(dst),))
    conn.close()
    return dst


LAYOUTS = ["as built", "1 KiB pages", "64 KiB pages", "reserved bytes"]


def laid_out(src: Path, tmp_path: Path, layout: str) -> Path:
    """``src`` as built, or a copy in one of the other ``LAYOUTS``."""
    if layout == "as built":
        return src
    page_size, reserve = {"1 KiB pages": (1024, None), "64 KiB pages": (65536, None),
                          "reserved bytes": (None, 40)}[layout]
    return rewrite(src, tmp_path / "laid-out.sqlite3", page_size=page_size, reserve=reserve)


def btree_pages(path: Path, name: str) -> dict[str, list[int]]:
    """The page numbers of table ``name``'s b-tree by kind (internal, leaf, overflow)."""
    conn = apsw.Connection(str(path))
    pages: dict[str, list[int]] = {}
    for pageno, kind in conn.execute("SELECT pageno, pagetype FROM dbstat WHERE name = ?", (name,)):
        pages.setdefault(kind, []).append(pageno)
    conn.close()
    return pages


def damage_btree(data: bytearray, pages: dict[str, list[int]], kinds: list[str], rnd: random.Random,
                 rounds: int, cell_tail: bytes = b"") -> None:
    """Overwrite ``rounds`` pointers a reader follows on pages of ``kinds`` — overflow pages'
    next-page numbers, cell offsets, cells' first bytes (then ``cell_tail``), right children,
    cell counts — with random, zero, huge or self-referencing values."""
    page_size = int.from_bytes(data[16:18], "big")
    n_pages = len(data) // page_size
    for _ in range(rounds):
        kind = rnd.choice(kinds)
        pgno = rnd.choice(pages[kind])
        base = (pgno - 1) * page_size
        value = rnd.choice([0, pgno, n_pages, n_pages + 1, 0xFFFFFFFF, rnd.randrange(1, n_pages + 1)])
        if kind == "overflow":  # the next-page number
            data[base : base + 4] = value.to_bytes(4, "big")
            continue
        n_cells = int.from_bytes(data[base + 3 : base + 5], "big")
        ptrs = base + (12 if kind == "internal" else 8)
        target = rnd.choice(["cell offset", "cell bytes", "right child" if kind == "internal" else "cell count"])
        if target == "cell offset" and n_cells:
            at = ptrs + 2 * rnd.randrange(n_cells)
            data[at : at + 2] = rnd.choice([0, 1, 4095, 65535, rnd.randrange(65536)]).to_bytes(2, "big")
        elif target == "cell bytes" and n_cells:
            at = ptrs + 2 * rnd.randrange(n_cells)
            cell = base + int.from_bytes(data[at : at + 2], "big")
            new = rnd.choice([value, 0xFFFFFFFF]).to_bytes(4, "big") + cell_tail
            data[cell : cell + len(new)] = new
        elif target == "right child":
            data[base + 8 : base + 12] = value.to_bytes(4, "big")
        else:
            data[base + 3 : base + 5] = rnd.choice([0, 65535, n_cells + 1]).to_bytes(2, "big")
