"""A fleet of `drsearch serve` replicas behind HAProxy, on 127.0.0.1 (docs/SCALING.md).

Three replicas (one worker each) over one index behind the system's HAProxy, N clients
sending searches for D seconds through it (defaults 64 / 20). Mid-load one replica is
SIGKILLed: the script counts the requests that failed and how long HAProxy took to mark
the replica down. Later the same replica is restarted on another blocklist (a replica
rolled out with the wrong list): HAProxy's health check, which requires the expected
``x-drsearch-identity`` on /health, keeps it out of rotation, and the script checks that no
client answered through HAProxy carried another identity; a second frontend over the same
replicas whose check asks only for HTTP 200 shows what the client-side check then catches:
``HttpSearcher`` refuses the foreign replica's answer (``SearcherError`` naming both
identities).

    python benchmarks/fleet.py                       # = make fleet: sample corpus, 64 clients, 20 s
    python benchmarks/fleet.py --clients 8 --duration 6 --json out.json
    python benchmarks/fleet.py --database X.sqlite3 --blocked-docids B.txt

Needs `haproxy` on PATH (Debian: `apt-get install haproxy`; `make fleet` installs it).
Exit 0 when the fleet behaved (no answer of a foreign identity through the checked frontend,
the killed replica marked down, the foreign one never up and caught by the client), 1 if not,
2 for bad usage or a missing haproxy.
"""

from __future__ import annotations

import argparse
import csv
import http.client
import io
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from drsearch.server import ServeError, ServeProcess, free_port

REPO = Path(__file__).resolve().parents[1]
SAMPLE_DOCS = REPO / "data/sample/docs.jsonl"
SAMPLE_BLOCKED = REPO / "data/sample/blocked_docids.txt"
CACHE = REPO / "benchmarks/.cache"
QUERIES = ["video game streaming", "climate policy", "stadia launch price", "plague quarantine",
           "electric car battery", "machine learning model", "ancient rome history", "vaccine trial",
           "solar power cost", "football world cup", "python programming", "ocean temperature"]
CHECK_INTER_MS = 500  # health-check period; fall 2 / rise 2


def haproxy_config(identity: str, ports: list[int], front: int, plain_front: int, sock: Path) -> str:
    """The HAProxy configuration of docs/SCALING.md for ``ports``, plus a second frontend whose
    check asks only for 200 (the comparison: what the identity check keeps out)."""
    servers = "\n".join(f"    server r{i} 127.0.0.1:{p}" for i, p in enumerate(ports, 1))
    return f"""global
    maxconn 4096
    stats socket {sock} mode 600 level admin

defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 15s
    timeout http-request 10s
    timeout http-keep-alive 30s
    timeout check 2s
    retries 3
    option redispatch 1
    retry-on conn-failure empty-response response-timeout

frontend fleet
    bind 127.0.0.1:{front}
    default_backend drsearch

frontend fleet_plain
    bind 127.0.0.1:{plain_front}
    default_backend drsearch_plain

backend drsearch
    balance roundrobin
    option httpchk
    http-check send meth GET uri /health ver HTTP/1.1 hdr host drsearch
    http-check expect status 200
    http-check expect hdr name x-drsearch-identity value "{identity}"
    default-server check inter {CHECK_INTER_MS}ms fall 2 rise 2
{servers}

backend drsearch_plain
    balance roundrobin
    option httpchk
    http-check send meth GET uri /health ver HTTP/1.1 hdr host drsearch
    http-check expect status 200
    default-server check inter {CHECK_INTER_MS}ms fall 2 rise 2
{servers}
"""


def get(url: str, timeout: float = 2.0) -> tuple[int, dict[str, str], bytes]:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.status, {k.lower(): v for k, v in r.headers.items()}, r.read()


def start_replica(database: Path, port: int, blocked: Path | None, log: Path) -> ServeProcess:
    """One replica (`drsearch serve`, 1 worker) on 127.0.0.1:``port``, returned once /health answers."""
    try:
        return ServeProcess(database, "--log-level", "warning", "--verify", "none",
                            "--blocked-docids", str(blocked) if blocked else "none",
                            port=port, log=log, stop_timeout_s=15.0).start()
    except ServeError as e:
        raise SystemExit(f"fleet: replica: {e.message}") from None


def stop(proc: subprocess.Popen[bytes], sig: int = signal.SIGTERM) -> None:
    if proc.poll() is None:
        os.killpg(proc.pid, sig)
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(5)


def server_states(sock: Path) -> dict[tuple[str, str], dict[str, str]]:
    """``show stat`` over HAProxy's admin socket: (backend, server) -> its CSV row."""
    with socket.socket(socket.AF_UNIX) as s:
        s.settimeout(2)
        s.connect(str(sock))
        s.sendall(b"show stat\n")
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    text = data.decode().lstrip("# ")
    return {(row["pxname"], row["svname"]): row for row in csv.DictReader(io.StringIO(text))
            if row["svname"] not in ("FRONTEND", "BACKEND")}


@dataclass
class Load:
    """What the clients saw, appended from their threads (list appends are atomic)."""

    identity: str
    stop_at: float
    ok: list[float] = field(default_factory=list)          # completion times
    failed: list[tuple[float, str]] = field(default_factory=list)
    foreign: list[tuple[float, str]] = field(default_factory=list)  # answers of another identity


def client(load: Load, port: int, seed: int) -> None:
    rng = random.Random(seed)
    conn: http.client.HTTPConnection | None = None
    while time.monotonic() < load.stop_at:
        body = json.dumps({"query": rng.choice(QUERIES), "k": rng.randint(1, 20)}).encode()
        try:
            if conn is None:
                conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            conn.request("POST", "/search", body, {"content-type": "application/json"})
            r = conn.getresponse()
            r.read()
            now = time.monotonic()
            got = r.getheader("x-drsearch-identity")
            if got is not None and got != load.identity:
                load.foreign.append((now, got))
            if r.status == 200 and got == load.identity:
                load.ok.append(now)
            elif got is None or got == load.identity:
                load.failed.append((now, f"HTTP {r.status}"))
            if r.getheader("connection", "").lower() == "close":
                conn.close()
                conn = None
        except (OSError, http.client.HTTPException) as e:
            load.failed.append((time.monotonic(), e.__class__.__name__))
            if conn is not None:
                conn.close()
            conn = None
    if conn is not None:
        conn.close()


def client_detection(plain_port: int, identity: str, within_s: float) -> dict[str, Any]:
    """Search through the 200-only frontend until HttpSearcher refuses a foreign answer."""
    import httpx

    from drsearch.agents import HttpSearcher, SearcherError

    http = HttpSearcher(httpx.Client(base_url=f"http://127.0.0.1:{plain_port}", timeout=10), attempts=1)
    requests, t0 = 0, time.monotonic()
    try:
        while time.monotonic() - t0 < within_s:
            try:  # the first answer fixes the identity (a foreign first one: the next one differs)
                if requests == 0:
                    http.corpus()
                else:
                    http.search(QUERIES[requests % len(QUERIES)], 5)
            except SearcherError as e:
                return {"detected": "answered as identity" in str(e), "requests": requests + 1,
                        "seconds": round(time.monotonic() - t0, 3), "message": str(e)[:600]}
            requests += 1
        return {"detected": False, "requests": requests}
    finally:
        http.close()


def wait_for(pred: Any, timeout_s: float, step_s: float = 0.05) -> float | None:
    """Seconds until ``pred()`` is true (an OSError counts as false), or None after ``timeout_s``."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        try:
            if pred():
                return time.monotonic() - t0
        except OSError:
            pass
        time.sleep(step_s)
    return None


def ensure_sample_db() -> Path:
    path = CACHE / "sample.sqlite3"
    if not path.exists():
        from drsearch.index import build, read_jsonl

        CACHE.mkdir(parents=True, exist_ok=True)
        build(read_jsonl(SAMPLE_DOCS), path)
    return path


def other_blocklist(blocked: Path | None, database: Path, out: Path) -> Path:
    """A valid blocklist with another SHA-256: the first docid of ``blocked``, or of the corpus."""
    from drsearch.index import BlockList, Engine

    if blocked is not None and len(ids := sorted(BlockList.from_file(blocked).docids)) > 1:
        out.write_text(ids[0] + "\n")
    else:
        with Engine.open(database) as engine:
            out.write_text(engine.search("the", 1).hits[0].docid + "\n")
    return out


def run(args: argparse.Namespace) -> dict[str, Any]:
    from drsearch.contract import fleet_identity
    from drsearch.index import BlockList, Engine

    database = Path(args.database) if args.database else ensure_sample_db()
    blocked = None if args.blocked_docids == "none" else Path(args.blocked_docids)
    with Engine.open(database, BlockList.from_file(blocked) if blocked else None) as engine:
        identity = fleet_identity(engine.meta["content_identity"], engine.blocklist.sha256)
    work = Path(tempfile.mkdtemp(prefix="drsearch-fleet-"))
    ports = [free_port() for _ in range(args.replicas)]
    front, plain = free_port(), free_port()
    sock = work / "haproxy.sock"
    cfg = work / "haproxy.cfg"
    cfg.write_text(haproxy_config(identity, ports, front, plain, sock))
    check = subprocess.run([args.haproxy, "-c", "-q", "-f", str(cfg)], capture_output=True, text=True)
    if check.returncode != 0:
        raise SystemExit(f"fleet: haproxy -c refused the config: {check.stderr.strip()[:500]}")
    replicas = [start_replica(database, p, blocked, work / f"replica-r{i}.log")
                for i, p in enumerate(ports, 1)]
    lb = subprocess.Popen([args.haproxy, "-db", "-f", str(cfg)], stdout=(work / "haproxy.log").open("wb"),
                          stderr=subprocess.STDOUT, start_new_session=True)
    report: dict[str, Any] = {"replicas": args.replicas, "clients": args.clients, "duration_s": args.duration,
                              "identity": identity, "check_inter_ms": CHECK_INTER_MS}
    try:
        def up(name: str, backend: str = "drsearch") -> bool:
            return server_states(sock)[(backend, name)]["status"].startswith("UP")

        names = [f"r{i}" for i in range(1, args.replicas + 1)]
        if wait_for(lambda: sock.exists() and all(up(n) for n in names), 30) is None:
            raise SystemExit("fleet: HAProxy did not see every replica up: "
                             f"{(work / 'haproxy.log').read_text()[-500:]}")
        victim = f"r{args.replicas}"
        t0 = time.monotonic()
        load = Load(identity, t0 + args.duration)
        threads = [threading.Thread(target=client, args=(load, front, i), daemon=True)
                   for i in range(args.clients)]
        for t in threads:
            t.start()

        time.sleep(args.duration * 0.3)
        killed_at = time.monotonic()
        replicas[-1].kill()
        marked_down = wait_for(lambda: not up(victim), args.duration)
        time.sleep(max(0.0, t0 + args.duration * 0.55 - time.monotonic()))
        after_kill = [(t, why) for t, why in load.failed if t >= killed_at]
        victim_row = server_states(sock)[("drsearch", victim)]
        report["kill"] = {
            "at_s": round(killed_at - t0, 2),
            "failed_requests": len(after_kill),
            "failures": sorted({why for _, why in after_kill}),
            "haproxy_marked_down_after_s": None if marked_down is None else round(marked_down, 2),
            # requests HAProxy re-sent elsewhere (what the clients did not see fail)
            "haproxy_retries": int(victim_row.get("wretr") or 0),
            "haproxy_redispatches": int(victim_row.get("wredis") or 0),
            "last_failure_after_s":
                round(max(t for t, _ in after_kill) - killed_at, 2) if after_kill else None,
        }

        wrong = other_blocklist(blocked, database, work / "other_blocklist.txt")
        restarted_at = time.monotonic()
        replicas[-1] = start_replica(database, ports[-1], wrong, work / f"replica-{victim}-restarted.log")
        with Engine.open(database, BlockList.from_file(wrong)) as engine:
            wrong_identity = fleet_identity(engine.meta["content_identity"], engine.blocklist.sha256)
        plain_up = wait_for(lambda: up(victim, "drsearch_plain"), args.duration)
        detection = client_detection(plain, identity, max(5.0, args.duration * 0.3))
        state = server_states(sock)[("drsearch", victim)]
        report["wrong_blocklist"] = {
            "at_s": round(restarted_at - t0, 2),
            "identity": wrong_identity,
            "checked_backend_state": state["status"],
            "checked_backend_check":
                " ".join(state.get(k, "") for k in ("check_status", "check_code", "last_chk")),
            "plain_backend_up_after_s": None if plain_up is None else round(plain_up, 2),
            "client": detection,
        }
        for t in threads:
            t.join(args.duration + 30)
        elapsed = time.monotonic() - t0
        report["requests"] = {"ok": len(load.ok), "failed": len(load.failed),
                              "foreign_identity": len(load.foreign),
                              "throughput_rps": round(len(load.ok) / elapsed, 1)}
        report["ok"] = bool(
            not load.foreign and marked_down is not None and not state["status"].startswith("UP")
            and detection["detected"] and len(load.ok) > 0)
    finally:
        stop(lb)
        for replica in replicas:
            replica.stop()
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--database",
                    help="index file (default: the sample corpus, built once into benchmarks/.cache)")
    ap.add_argument("--blocked-docids", default=str(SAMPLE_BLOCKED), metavar="FILE|none",
                    help="the fleet's blocklist (default: the sample's)")
    ap.add_argument("--replicas", type=int, default=3)
    ap.add_argument("--clients", type=int, default=64)
    ap.add_argument("--duration", type=float, default=20.0, metavar="S")
    ap.add_argument("--haproxy", default=shutil.which("haproxy") or "haproxy")
    ap.add_argument("--json", metavar="FILE", help="also write the report here")
    ap.add_argument("--keep", action="store_true", help="keep the work directory (configs, logs)")
    args = ap.parse_args(argv)
    if args.replicas < 2 or args.clients < 1 or args.duration < 3:
        print("fleet: error: need --replicas >= 2, --clients >= 1, --duration >= 3", file=sys.stderr)
        return 2
    if shutil.which(args.haproxy) is None:
        print(f"fleet: error: {args.haproxy} not found (Debian: apt-get install haproxy)", file=sys.stderr)
        return 2
    report = run(args)
    text = json.dumps(report, indent=2, sort_keys=True)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n")
    k, w = report["kill"], report["wrong_blocklist"]
    print(f"fleet: {report['requests']['ok']} ok, {report['requests']['throughput_rps']} req/s; kill: "
          f"{k['failed_requests']} failed, marked down after {k['haproxy_marked_down_after_s']} s; wrong "
          f"blocklist: checked backend {w['checked_backend_state']}, "
          f"{report['requests']['foreign_identity']} foreign answers, client detected: "
          f"{w['client']['detected']}", file=sys.stderr)
    return 0 if report["ok"] else 1


if __name__ == "__main__":
    sys.exit(main())
