"""Can a client tell a blocked document from a missing one by timing? Measured, not assumed.

Opens blocked and missing documents interleaved (a seeded random order within each pair,
so drift of the machine's speed hits both alike) and prints, per form, the two medians,
their difference and a two-sided Mann-Whitney U p-value (scipy). Three measurements:

- ``engine``: ``Engine.open_document`` in-process, by docid and by URL (microseconds);
- ``http``: ``POST /open`` against a real ``drsearch serve`` (1 worker, ``--verify none``)
  over one keep-alive connection, by docid and by URL;
- ``http-next``: the latency of a fixed ``/search`` sent right after each of those opens
  (a server that does extra work after a blocked 404 makes the *next* request slower).

And for words (``--measure words``): a one-word search for a word that only blocked documents
contain against one for a word that occurs nowhere (same length), in-process
(``Engine.search``), over HTTP ``POST /search`` and ``POST /retrieve`` (a batch of that one
word). A server that reads a blocked-only word's postings answers it later: an oracle for
"does some hidden document contain X". Each measure also says how often the
slower request of a pair is the blocked-only word's (the guess of a client that sends one of
each) with a two-sided binomial p-value.

A small p (say < 0.01) with a difference of a few µs means a timing oracle; p well above
that means the two are not told apart at this sample size. Blocked docids are drawn from
the corpus (seeded); missing ones are docids of the same shape that are not in it.

    python benchmarks/blocked_timing.py                     # sample corpus, n=1000 per side
    python benchmarks/blocked_timing.py --database X.sqlite3 --n 2000 --json out.json
    python benchmarks/blocked_timing.py --measure words --n 1500   # blocked-only vs unknown words
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import socket
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scipy.stats import binomtest, mannwhitneyu
from serving import ensure_sample_db, start_server


def _mutate(text: str, rng: random.Random) -> str:
    """``text`` with its last six letters or digits replaced at random (same length and shape)."""
    chars = list(text)
    spots = [i for i, c in enumerate(chars) if c.isalnum()][-6:]
    for i in spots:
        chars[i] = rng.choice("0123456789abcdef")
    return "".join(chars)


_MUTATION_TRIES = 200


def pick(database: Path, n_blocked: int,
         seed: int) -> tuple[list[tuple[str, str]], list[tuple[str, str] | None]]:
    """(blocked, missing) (docid, url) pairs. Each missing pair is its blocked partner with a
    few characters changed (same length and shape, so parsing and URL canonicalisation cost
    the same) and exists nowhere in the corpus."""
    from drsearch.contract import DocumentNotFoundError
    from drsearch.index import Engine

    rng = random.Random(seed)
    with Engine.open(database) as e:
        rows = [(d, u) for d, u in e._conn.execute("SELECT docid, url FROM documents ORDER BY id")]
        blocked = rng.sample(rows, min(n_blocked, len(rows) // 2))
        missing = []
        for docid, url in blocked:
            # Bounded: a URL whose last letters canonicalisation drops (a tracking parameter, a
            # fragment) opens its own document however they change; such a document stays
            # blocked, and its open is left out of the comparison (None).
            for _ in range(_MUTATION_TRIES):
                fake = (_mutate(docid, rng), _mutate(url, rng))
                try:
                    e.open_document(docid=fake[0])
                    continue
                except DocumentNotFoundError:
                    pass
                try:
                    e.open_document(url=fake[1])
                except DocumentNotFoundError:
                    missing.append(fake)
                    break
            else:
                missing.append(None)
    return blocked, missing


def paired(blocked: list[tuple[str, str]],
           missing: list[tuple[str, str] | None]) -> tuple[list[tuple[str, str]], list[tuple[str, str]]]:
    """The (blocked, missing) pairs that have a missing partner."""
    kept = [(b, m) for b, m in zip(blocked, missing, strict=True) if m is not None]
    return [b for b, _ in kept], [m for _, m in kept]


_WORD = re.compile(r"[a-z]{5,14}")


_VOWELS, _CONSONANTS = "aeiou", "bcdfghjklmnpqrstvwxz"


def _respell(word: str, rng: random.Random) -> str:
    """``word`` with its first three letters replaced, each vowel by a vowel and each other
    letter by a consonant (``y`` kept): the same length, the same ending and the same pattern
    of vowels and consonants, so that the stemmer does the same work for both."""
    head = "".join(c if c == "y" else rng.choice(_VOWELS if c in _VOWELS else _CONSONANTS)
                   for c in word[:3])
    return head + word[3:]


def pick_words(database: Path, blocked_docids: list[str], n_words: int,
               seed: int) -> list[tuple[str, str]]:
    """(blocked-only, unknown) word pairs: the first a lower-case word of a blocked document
    that FTS5 finds in no other document (the file's own index, without the blocklist, is the
    judge), the second the same word respelt (:func:`_respell`) until FTS5 finds it nowhere
    (so parsing and stemming cost the same). Up to ``n_words`` pairs."""
    from drsearch.index import Engine

    rng = random.Random(seed)
    with Engine.open(database) as e:
        rows = {e._conn.execute("SELECT id FROM documents WHERE docid = ?", (d,)).get for d in blocked_docids}
        candidates = sorted({w for d in blocked_docids
                             for w in _WORD.findall(e.open_document(docid=d).text.lower())})
        rng.shuffle(candidates)
        pairs: list[tuple[str, str]] = []
        for word in candidates:
            if len(pairs) == n_words:
                break
            if len(e.parse(word).terms) != 1:
                continue
            chunks = [c for c, _ in e.fts5_rank(word, limit=1 << 30)]
            if not chunks or any(int(e._chunk_doc[c]) not in rows for c in chunks):
                continue
            while True:
                fake = _respell(word, rng)
                if len(e.parse(fake).terms) == 1 and not e.fts5_rank(fake, limit=1):
                    break
            pairs.append((word, fake))
    if not pairs:
        raise SystemExit("no word of the blocked documents is theirs alone: block other documents")
    return pairs


def compare(name: str, blocked: list[float], missing: list[float]) -> dict[str, Any]:
    """Medians, their difference and a Mann-Whitney U p-value of the two sides; and how often
    the blocked side of a pair (blocked[i], missing[i]) is the slower one, with a binomial
    p-value (0.5 when the two cannot be told apart)."""
    mb, mm = statistics.median(blocked), statistics.median(missing)
    p = float(mannwhitneyu(blocked, missing, alternative="two-sided").pvalue)
    slower = sum(b > m for b, m in zip(blocked, missing, strict=True))
    return {"measure": name, "n": len(blocked), "blocked_median_us": round(mb * 1e6, 2),
            "missing_median_us": round(mm * 1e6, 2), "difference_us": round((mb - mm) * 1e6, 2),
            "mann_whitney_p": p, "pairs_blocked_slower": slower,
            "pairs_binomial_p": float(binomtest(slower, len(blocked), 0.5).pvalue) if blocked else 1.0}


def interleaved(n: int, seed: int, blocked: Callable[[int], float],
                missing: Callable[[int], float]) -> tuple[list[float], list[float]]:
    """n timings of each, pair by pair in a random order within the pair."""
    rng = random.Random(seed)
    b: list[float] = []
    m: list[float] = []
    for i in range(n):
        if rng.random() < 0.5:
            b.append(blocked(i))
            m.append(missing(i))
        else:
            m.append(missing(i))
            b.append(blocked(i))
    return b, m


# -- in-process ----------------------------------------------------------------------------------
def engine_runs(database: Path, blocklist_path: Path, blocked: list[tuple[str, str]],
                missing: list[tuple[str, str]], n: int, seed: int) -> list[dict[str, Any]]:
    from drsearch.contract import DocumentNotFoundError
    from drsearch.index import BlockList, Engine

    engine = Engine.open(database, BlockList.from_file(blocklist_path))
    out = []
    for form in ("docid", "url"):
        key = 0 if form == "docid" else 1

        def timed(pairs: list[tuple[str, str]], key: int = key, form: str = form) -> Callable[[int], float]:
            def one(i: int) -> float:
                target = pairs[i % len(pairs)][key]
                t = time.perf_counter()
                try:
                    engine.open_document(**{form: target})
                except DocumentNotFoundError:
                    pass
                else:
                    raise SystemExit(f"{form} {target!r} was served: not blocked or missing")
                return time.perf_counter() - t
            return one

        for j in range(min(200, n)):  # warm caches and the connection
            timed(blocked)(j), timed(missing)(j)
        b, m = interleaved(n, seed, timed(blocked), timed(missing))
        out.append(compare(f"engine open by {form}", b, m))
    engine.close()
    return out


# -- over HTTP -----------------------------------------------------------------------------------
class Client:
    """One keep-alive HTTP/1.1 connection (Content-Length bodies: all the server sends)."""

    def __init__(self, port: int) -> None:
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""
        self.last_body = b""

    def post(self, path: str, body: dict[str, Any]) -> tuple[int, float]:
        data = json.dumps(body).encode()
        request = (f"POST {path} HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   f"Content-Length: {len(data)}\r\n\r\n").encode() + data
        t = time.perf_counter()
        self.sock.sendall(request)
        while b"\r\n\r\n" not in self.buf:
            self.buf += self._recv()
        head, _, rest = self.buf.partition(b"\r\n\r\n")
        length = next(int(line.split(b":", 1)[1]) for line in head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:"))
        while len(rest) < length:
            rest += self._recv()
        elapsed = time.perf_counter() - t
        self.buf = rest[length:]
        self.last_body = rest[:length]
        return int(head.split(b" ", 2)[1]), elapsed

    def _recv(self) -> bytes:
        chunk = self.sock.recv(1 << 20)
        if not chunk:
            raise SystemExit("the server closed the connection")
        return chunk


def http_runs(database: Path, blocklist_path: Path, blocked: list[tuple[str, str]],
              missing: list[tuple[str, str]], n: int, seed: int, workdir: Path) -> list[dict[str, Any]]:
    server = start_server(database, "--blocked-docids", str(blocklist_path), "--verify", "none",
                          log=workdir / "serve.log")
    port = server.port
    out = []
    try:
        client = Client(port)
        probe = {"query": "video game streaming", "k": 10}
        for form in ("docid", "url"):
            key = 0 if form == "docid" else 1
            nexts: dict[str, list[float]] = {"blocked": [], "missing": []}

            def timed(pairs: list[tuple[str, str]], side: str, key: int = key, form: str = form,
                      nexts: dict[str, list[float]] = nexts) -> Callable[[int], float]:
                def one(i: int) -> float:
                    status, elapsed = client.post("/open", {form: pairs[i % len(pairs)][key]})
                    if status != 404:
                        raise SystemExit(f"/open answered {status}, not 404")
                    nexts[side].append(client.post("/search", probe)[1])
                    return elapsed
                return one

            for j in range(min(200, n)):
                timed(blocked, "blocked")(j), timed(missing, "missing")(j)
            nexts["blocked"].clear()
            nexts["missing"].clear()
            b, m = interleaved(n, seed, timed(blocked, "blocked"), timed(missing, "missing"))
            out.append(compare(f"HTTP /open by {form}", b, m))
            out.append(compare(f"HTTP /search right after a {form} /open",
                               nexts["blocked"], nexts["missing"]))
        client.sock.close()
    finally:
        server.stop()
    return out


# -- words: blocked-only vs unknown --------------------------------------------------------------
def word_engine_runs(database: Path, blocklist_path: Path, pairs: list[tuple[str, str]], n: int,
                     seed: int) -> list[dict[str, Any]]:
    from drsearch.index import BlockList, Engine

    engine = Engine.open(database, BlockList.from_file(blocklist_path))

    def timed(side: int) -> Callable[[int], float]:
        def one(i: int) -> float:
            word = pairs[i % len(pairs)][side]
            t = time.perf_counter()
            hits = engine.search(word, 10).hits
            elapsed = time.perf_counter() - t
            if hits:
                raise SystemExit(f"a search for {word!r} found {hits[0].docid}: not blocked-only")
            return elapsed
        return one

    for j in range(min(200, n)):
        timed(0)(j), timed(1)(j)
    b, m = interleaved(n, seed, timed(0), timed(1))
    engine.close()
    return [compare("engine search, one word", b, m)]


def word_http_runs(database: Path, blocklist_path: Path, pairs: list[tuple[str, str]], n: int,
                   seed: int, workdir: Path) -> list[dict[str, Any]]:
    server = start_server(database, "--blocked-docids", str(blocklist_path), "--verify", "none",
                          log=workdir / "serve-words.log")
    empty = {"/search": b'"results":[]', "/retrieve": b'"result":[[]]'}
    out = []
    try:
        client = Client(server.port)
        for path in ("/search", "/retrieve"):
            def timed(side: int, path: str = path) -> Callable[[int], float]:
                def one(i: int) -> float:
                    word = pairs[i % len(pairs)][side]
                    body = {"query": word, "k": 10} if path == "/search" else {"queries": [word], "topk": 10}
                    status, elapsed = client.post(path, body)
                    if status != 200 or empty[path] not in client.last_body:
                        raise SystemExit(f"{path} {word!r} answered {status} {client.last_body[:200]!r}")
                    return elapsed
                return one

            for j in range(min(200, n)):
                timed(0)(j), timed(1)(j)
            b, m = interleaved(n, seed, timed(0), timed(1))
            out.append(compare(f"HTTP {path}, one word", b, m))
        client.sock.close()
    finally:
        server.stop()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database", type=Path, help="index file (default: the sample corpus)")
    ap.add_argument("--n", type=int, default=1000, help="timings per side and measure (default 1000)")
    ap.add_argument("--blocked", type=int, default=20, help="documents to block (default 20)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--skip-http", action="store_true", help="in-process only")
    ap.add_argument("--measure", choices=("all", "open", "words"), default="all",
                    help="opens of blocked vs missing documents, one-word searches for blocked-only "
                         "vs unknown words, or both (default)")
    ap.add_argument("--words", type=int, default=50,
                    help="(blocked-only, unknown) word pairs, used in turn (default 50)")
    ap.add_argument("--json", type=Path, help="write the results here")
    args = ap.parse_args(argv)
    database = args.database or ensure_sample_db()
    blocked, missing = pick(database, args.blocked, args.seed)
    pairs = pick_words(database, [d for d, _ in blocked], args.words, args.seed) \
        if args.measure != "open" else []
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="blocked-timing-") as td:
        work = Path(td)
        blocklist = work / "blocked.txt"
        blocklist.write_text("".join(f"{d}\n" for d, _ in blocked))
        if args.measure != "words":
            opened, absent = paired(blocked, missing)
            results += engine_runs(database, blocklist, opened, absent, args.n, args.seed)
            if not args.skip_http:
                results += http_runs(database, blocklist, opened, absent, args.n, args.seed, work)
        if pairs:
            results += word_engine_runs(database, blocklist, pairs, args.n, args.seed)
            if not args.skip_http:
                results += word_http_runs(database, blocklist, pairs, args.n, args.seed, work)
    load = os.getloadavg()
    print(f"{database.name}: {len(blocked)} blocked docids; {len(pairs)} blocked-only/unknown word "
          f"pairs; n={args.n} per side; seed {args.seed}; load average {load[0]:.1f} on "
          f"{os.cpu_count()} cores")
    print(table(results))
    if args.json:
        args.json.write_text(json.dumps({"database": database.name, "n": args.n, "seed": args.seed,
                                         "words": [list(p) for p in pairs], "load_average": load[0],
                                         "results": results}, indent=2, sort_keys=True) + "\n")
    return 0


def table(results: list[dict[str, Any]]) -> str:
    """The results as the printed table (one row per measure)."""
    lines = [f"{'measure':<40} {'blocked µs':>11} {'missing µs':>11} {'diff µs':>8} {'Mann-Whitney p':>15} "
             f"{'blocked slower':>15} {'binomial p':>11}"]
    for r in results:
        lines.append(f"{r['measure']:<40} {r['blocked_median_us']:>11.1f} {r['missing_median_us']:>11.1f} "
                     f"{r['difference_us']:>8.1f} {r['mann_whitney_p']:>15.3g} "
                     f"{r['pairs_blocked_slower']:>8}/{r['n']:<6} {r['pairs_binomial_p']:>11.3g}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
