"""The scripted chat server knows attempts: seed = 20260811 + attempt x 1,000,000 + index."""

from __future__ import annotations

from typing import Any

import httpx

from drsearch.dev.chat import DEFAULT_SCRIPT, SEED_BASE, FakeLLM, attempt_and_index, serve_fake


def body(seed: int) -> dict[str, Any]:
    return {"messages": [{"content": "sys", "role": "system"}, {"content": "Question: Q?\nAnswer:", "role": "user"}],
            "model": "m", "seed": seed}


def content(fake: FakeLLM, seed: int) -> str:
    status, reply = fake.respond(body(seed))
    assert status == 200
    return str(reply["choices"][0]["message"]["content"])


def test_attempt_and_index_of_a_seed() -> None:
    assert attempt_and_index(SEED_BASE + 7) == (0, 7)
    assert attempt_and_index(SEED_BASE + 2_000_255) == (2, 255)
    assert attempt_and_index(1000) == (0, 1000 - SEED_BASE)  # a preset with its own seed_base


def test_a_script_can_solve_attempt_0_and_fail_attempt_1() -> None:
    fake = FakeLLM({(0, 3): [{"content": "right"}], (1, 3): [{"content": "wrong-ATTEMPT"}],
                    3: [{"content": "any-INDEX-ATTEMPT"}]})
    assert content(fake, SEED_BASE + 3) == "right"
    assert content(fake, SEED_BASE + 1_000_003) == "wrong-1"
    assert content(fake, SEED_BASE + 2_000_003) == "any-3-2"  # no (2, 3) script: the index's


def test_older_scripts_keep_working() -> None:
    fake = FakeLLM({5: [{"content": "five"}], 2_000_001: [{"content": "seed-keyed"}],
                    1000 - SEED_BASE: [{"content": "own base"}]})
    assert content(fake, SEED_BASE + 5) == "five"
    assert content(fake, SEED_BASE + 1_000_005) == "five"  # an index script answers every attempt
    assert content(fake, SEED_BASE + 2_000_001) == "seed-keyed"
    assert content(fake, 1000) == "own base"
    assert fake.script_for(0, 9, 9) is DEFAULT_SCRIPT
    assert fake.attempts[(5, 0)] == 1 and fake.attempts[(1_000_005, 0)] == 1  # tries per seed and turn


def test_over_http() -> None:
    with serve_fake({(1, 0): [{"content": "attempt one"}]}) as fake:
        r = httpx.post(fake.url + "/chat/completions", json=body(SEED_BASE + 1_000_000), timeout=10)
    assert r.json()["choices"][0]["message"]["content"] == "attempt one"
