"""A small but real generator: three stages over the sample questions, two of them asking
models (served by the rule-based responder in drsearch.dev.chat).

- ``seed``: candidates from the question rows; rejects answers without a number;
- ``rewrite``: a ``rewriter`` model rewrites each question; rejects replies that are not questions;
- ``closed_book``: a ``solver`` model answers from memory in a closed-book agent episode;
  rejects what it already knows, and emits the rest as DR-256-shaped rows with an
  ``example`` metadata block.

Run as a program (the kill -9 test does): ``python -m tests.benchmark.generate.example_pipeline
--questions Q --base-url URL --out DIR [--until STAGE] [--cache-mode M] [--cache F]``.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import Any

from drsearch.agents import CLOSED_BOOK, Preset, Question
from drsearch.agents.questions import PromptMessage
from drsearch.benchmark.generate import (
    GenerateError,
    Keep,
    ModelEndpoint,
    Outcome,
    Pipeline,
    Reject,
    Stage,
    StageContext,
)
from drsearch.dev.chat import Rule
from drsearch.tools.generate_cli import generate_main

from ...helpers import DATA

QUESTIONS = DATA / "sample/questions.jsonl"
SYSTEM = "Answer the question by searching the corpus with the search and open tools. Reply with the answer only."


def _norm(text: str) -> str:
    return " ".join(text.lower().replace(",", "").split())


def seed(ctx: StageContext) -> None:
    rows = ctx.read_jsonl(ctx.stage.inputs[0])
    items = [{"label": r["label"], "qid": r["metadata"]["qid"], "question": r["metadata"]["question"]} for r in rows]

    def process(item: dict[str, Any]) -> Outcome:
        if not re.search(r"\d", item["label"]):
            return Reject("numeric_answer", f"answer {item['label']!r} holds no number")
        return Keep(item)

    ctx.write_jsonl("seeds.jsonl", ctx.map(items, lambda i: i["qid"], process))


def rewrite(ctx: StageContext) -> None:
    endpoint = ctx.stage.models[0]

    def process(item: dict[str, Any]) -> Outcome:
        body = {"messages": [{"role": "user", "content": f"Rewrite the question ({ctx.settings['style']}).\n"
                                                           f"Question: {item['question']}"}],
                "seed": ctx.settings["seed"], "temperature": ctx.settings["temperature"]}
        text = ctx.reply_text(endpoint, body, f"rewrite {item['qid']}").strip()
        if not text.endswith("?"):
            return Reject("rewrite_format", f"the rewrite is not a question: {text[:80]!r}")
        return Keep({**item, "rewritten": text})

    items = ctx.read_jsonl("seeds.jsonl")
    # at the run's --concurrency: no stage setting, so changing it reruns nothing
    ctx.write_jsonl("rewritten.jsonl", ctx.map(items, lambda i: i["qid"], process))


def closed_book(ctx: StageContext) -> None:
    """The closed-book filter: one agent episode per item under the closed-book preset (the
    agents loop through the pipeline's cache), as a difficulty filter would run it."""
    endpoint = ctx.stage.models[0]
    preset = Preset.model_validate(ctx.settings["preset"])
    items = ctx.read_jsonl("rewritten.jsonl")
    index = {item["qid"]: i for i, item in enumerate(items)}

    def process(item: dict[str, Any]) -> Outcome:
        question = Question(qid=item["qid"], index=index[item["qid"]], prompt=(
            PromptMessage(role="system", content="Answer from memory, in a few words."),
            PromptMessage(role="user", content=f"Question: {item['rewritten']}")))
        episode = ctx.episode(question, preset, endpoint)
        if episode["status"] != "answered":  # no verdict without an answer: stop loudly
            raise GenerateError(f"closed-book episode {item['qid']}: {episode['status']}: {episode['reason']}")
        answer = episode["final_answer"]
        if _norm(answer) == _norm(item["label"]):
            return Reject("closed_book_solved", f"the solver answered {answer!r} without tools")
        return Keep({**item, "closed_book_answer": answer})

    kept = ctx.map(items, lambda i: i["qid"], process)
    rows = [{"label": item["label"],
             "metadata": {"benchmark": {"index": i}, "qid": f"example-{item['qid']}",
                          "example": {"closed_book_answer": item["closed_book_answer"],
                                      "original_question": item["question"], "source_qid": item["qid"]}},
             "prompt": [{"content": SYSTEM, "role": "system"},
                        {"content": f"Question: {item['rewritten']}\nAnswer:", "role": "user"}]}
            for i, item in enumerate(kept)]
    ctx.write_jsonl("questions.jsonl", rows)


def build(questions: Path, base_url: str, *, style: str = "concise", solver_temperature: float = 0.0) -> Pipeline:
    rewriter = ModelEndpoint(model="rewriter", base_url=base_url)
    solver = ModelEndpoint(model="solver", base_url=base_url)
    return Pipeline("example", [
        Stage("seed", seed, inputs=(str(questions),), outputs=("seeds.jsonl",)),
        Stage("rewrite", rewrite, inputs=("seeds.jsonl",), outputs=("rewritten.jsonl",),
              settings={"seed": 7, "style": style, "temperature": 0.0},
              models=(rewriter,)),
        Stage("closed_book", closed_book, inputs=("rewritten.jsonl",), outputs=("questions.jsonl",),
              settings={"preset": CLOSED_BOOK.model_copy(update={"temperature": solver_temperature,
                                                                 "seed_base": 11}).model_dump(mode="json")},
              models=(solver,)),
    ])


def _rewritten(body: dict[str, Any]) -> str:
    """The rewriter: the question in a fixed form (one question rewritten badly on purpose)."""
    text = body["messages"][-1]["content"]
    style = text.split("(", 1)[1].split(")", 1)[0]
    question = text.split("Question: ", 1)[1].rstrip("?")
    if "black cat" in question or "Keck Observatory" in question:
        return "I cannot rewrite that."
    return f"[{style}] {question}?"


def _solved(body: dict[str, Any]) -> str:
    return "I do not know."


RULES = [
    Rule("rewriter", "Rewrite the question", _rewritten),
    Rule("solver", ("Answer from memory", "Boeing 787-9"), "30"),
    Rule("solver", ("Answer from memory", "Houston-area dealers"), "30,154"),
    Rule("solver", "Answer from memory", _solved),
]
"""What the example's models answer: the solver knows two of the answers already."""


def main(argv: list[str] | None = None) -> int:
    def options(p: argparse.ArgumentParser) -> None:
        p.add_argument("--questions", type=Path, default=QUESTIONS)
        p.add_argument("--base-url", required=True)
        p.add_argument("--style", default="concise")

    return generate_main(lambda a: build(a.questions, a.base_url, style=a.style),
                         argv, prog="example-generator", add_arguments=options)


if __name__ == "__main__":
    sys.exit(main())
