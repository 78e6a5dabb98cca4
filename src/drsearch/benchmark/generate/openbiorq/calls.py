"""One model call of a stage, parsed: the reply as its schema, or UnparseableReply."""

from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel

from ..stages import ModelEndpoint, StageContext
from .prompts import Messages
from .replies import parse_reply

M = TypeVar("M", bound=BaseModel)


def endpoint(ctx: StageContext, role: str) -> ModelEndpoint:
    """The stage's endpoint for ``role`` (``writer`` or ``judge``: the stage settings name its model)."""
    model = ctx.settings[f"{role}_model"]
    return next(m for m in ctx.stage.models if m.model == model)


def ask(ctx: StageContext, role: str, messages: Messages, schema: type[M], describe: str) -> M:
    """Ask the ``role`` model (through the replay cache) and parse its reply as ``schema``.

    The stage's ``seed`` and ``temperature`` go into every request, so a recorded generation
    replays exactly. Raises UnparseableReply for a reply that breaks the schema.
    """
    body = {"messages": messages, "seed": int(ctx.settings["seed"]),
            "temperature": float(ctx.settings["temperature"])}
    return parse_reply(schema, ctx.reply_text(endpoint(ctx, role), body, describe))


__all__ = ["ask", "endpoint"]
