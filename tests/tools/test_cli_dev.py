"""``drsearch dev model`` serves the scripted models over the real OpenAI-compatible HTTP API
(a subprocess on 127.0.0.1, as a user starts it), and ``drsearch dev wait`` waits for servers."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from drsearch.dev.agent import UNKNOWN, answer_from, question_of

from ..docblocks import free_ports

DRSEARCH = str(Path(sys.executable).parent / "drsearch")


@contextmanager
def dev_model(script: str, *extra: str) -> Iterator[str]:
    proc = subprocess.Popen([DRSEARCH, "dev", "model", "--script", script, *extra], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout is not None
        url = proc.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:") and url.endswith("/v1"), (url, proc.stderr.read() if
                                                                            proc.poll() is not None else "")
        yield url
    finally:
        proc.send_signal(signal.SIGTERM)
        rc = proc.wait(timeout=30)
    assert rc == 0  # SIGTERM ends it cleanly


def post(url: str, body: Any) -> tuple[int, dict[str, Any]]:
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    req = urllib.request.Request(url + "/chat/completions", data=data, headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def test_the_agent_script_searches_opens_then_answers_over_http() -> None:
    with dev_model("agent") as url:
        with urllib.request.urlopen(url + "/models", timeout=30) as r:
            assert json.loads(r.read())["data"][0]["id"] == "scripted-reader"
        q = {"role": "user", "content": "Question: How many moons does Mars have?"}
        status, probe = post(url, {"model": "m", "messages": [q]})  # no seed: run's endpoint probe
        assert status == 200 and probe["choices"][0]["message"]["content"] == "OK"
        status, first = post(url, {"model": "m", "seed": 1, "messages": [q]})
        call = first["choices"][0]["message"]["tool_calls"][0]["function"]
        assert status == 200 and call["name"] == "search"
        assert json.loads(call["arguments"]) == {"k": 3, "query": "How many moons does Mars have?"}
        a1 = first["choices"][0]["message"]
        hits = {"role": "tool", "content": "1 result(s)\n\n[1] docid: d-1\ntitle: Mars\nurl: u\ntext: t"}
        status, second = post(url, {"model": "m", "seed": 1, "messages": [q, a1, hits]})
        call = second["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == "open" and json.loads(call["arguments"]) == {"docid": "d-1"}
        page = {"role": "tool", "content": "docid: d-1\ntitle: Mars\n\nMars is red. Mars has 2 moons, Phobos and "
                                           "Deimos."}
        a2 = second["choices"][0]["message"]
        status, third = post(url, {"model": "m", "seed": 1, "messages": [q, a1, hits, a2, page]})
        assert status == 200 and third["choices"][0]["message"]["content"] == "2"
        assert third["usage"]["prompt_tokens"] > 0
        # a request it cannot read: a 400 with the reason, never a dropped connection or a 500
        assert post(url, b"{not json")[0] == 400
        status, err = post(url, {"model": "m"})
        assert status == 400 and "messages" in err["error"]["message"]


def test_the_judge_script_is_the_oracle_judge_over_http() -> None:
    def ask(url: str, response: str) -> str:
        user = ("[question]: q\n[reference answer]: Braunau am Inn\n"
                f"<<<BEGIN RESPONSE-0123456789abcdef>>>\n{response}\n<<<END RESPONSE-0123456789abcdef>>>")
        status, body = post(url, {"model": "oracle", "messages": [{"role": "user", "content": user}]})
        assert status == 200
        return str(json.loads(body["choices"][0]["message"]["content"])["correct"])

    with dev_model("judge") as url:
        assert ask(url, "braunau am inn") == "yes" and ask(url, "Vienna") == "no"
        # a prompt the oracle cannot read: a 400 naming why, never a dropped connection
        odd = "no known prompt\n<<<BEGIN RESPONSE-0123456789abcdef>>>\nx\n<<<END RESPONSE-0123456789abcdef>>>"
        status, body = post(url, {"model": "oracle", "messages": [{"role": "user", "content": odd}]})
        assert status == 400 and body["error"]["message"].startswith("the script cannot answer this request")


def test_the_drbencher_script_answers_its_rules_and_refuses_the_rest() -> None:
    with dev_model("drbencher", "--host", "127.0.0.1") as url:
        status, body = post(url, {"model": "solver", "messages": [{"role": "user", "content": "anything"}]})
        assert status == 200 and body["choices"][0]["message"]["content"] == "I do not know."
        status, body = post(url, {"model": "nobody", "messages": [{"role": "user", "content": "x"}]})
        assert status == 400 and body["error"]["type"] == "no_rule"


def test_a_busy_port_is_one_line_and_exit_2() -> None:
    with dev_model("agent") as url:
        port = url.rsplit(":", 1)[1].split("/")[0]
        done = subprocess.run([DRSEARCH, "dev", "model", "--script", "judge", "--port", port], capture_output=True,
                              text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(f"drsearch: error: --host 127.0.0.1 --port {port}: cannot listen")


@pytest.mark.parametrize(("argv", "rc", "message"), [
    (["model", "--script", "nope"], 2, "invalid choice: 'nope'"),
    (["model"], 2, "--script"),
    (["wait", "127.0.0.1:1"], 2, "drsearch: error: 127.0.0.1:1: not an http:// or https:// URL"),
])
def test_bad_arguments_are_one_line_errors(argv: list[str], rc: int, message: str) -> None:
    done = subprocess.run([DRSEARCH, "dev", *argv], capture_output=True, text=True, timeout=60)
    assert done.returncode == rc and message in done.stderr and "Traceback" not in done.stderr


def test_dev_wait_returns_once_a_server_answers_and_gives_up_on_a_silent_port() -> None:
    with dev_model("agent") as url:
        done = subprocess.run([DRSEARCH, "dev", "wait", url + "/models", url + "/nope"], capture_output=True,
                              text=True, timeout=60)
        assert done.returncode == 0, done.stderr  # a 404 is an answer: the server listens
    (port,) = free_ports(1)
    silent = f"http://127.0.0.1:{port}/health"
    done = subprocess.run([DRSEARCH, "dev", "wait", silent, "--timeout", "0.5"], capture_output=True, text=True,
                          timeout=60)
    assert done.returncode == 1 and done.stderr == f"drsearch: error: {silent}: no answer within 0.5 s\n"


@pytest.mark.parametrize(("question", "page", "answer"), [
    ("How many jets did Emirates buy?", "Intro.\n\nIt rained. Emirates agreed to buy 30 jets in 2019.", "30"),
    ("What was the name of the dog?", "Intro.\n\nThe cat slept. The dog was named Sasha by its owner.", "Sasha"),
    ("Who founded it?", "Intro.\n\nno capitals here at all", UNKNOWN),
    ("Who founded it?", "", UNKNOWN),
])
def test_the_reader_answers_from_the_best_matching_sentence(question: str, page: str, answer: str) -> None:
    assert answer_from(question, page) == answer


def test_the_question_is_the_first_user_line() -> None:
    assert question_of([{"role": "system", "content": "s"}, {"role": "user", "content": "Question: Q?\nmore"}]) == "Q?"
