"""The result records of release validation: one :class:`Check` per line of the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

Status = Literal["PASS", "FAIL", "WARN"]


@dataclass(frozen=True)
class Check:
    """One line of the report: a named check, its status and a one-line explanation."""

    name: str
    status: Status
    message: str
    details: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "status": self.status, "message": self.message,
                "details": self.details}


def check(name: str, problems: list[str], ok: str, **details: Any) -> Check:
    """FAIL listing the first problems if there are any, else PASS with ``ok``."""
    if problems:
        return Check(name, "FAIL", "; ".join(problems[:4]), {"problems": problems, **details})
    return Check(name, "PASS", ok, details)


@dataclass(frozen=True)
class ValidationReport:
    """Every check run, in order. ``ok``: no FAIL (and no WARN when ``strict``)."""

    release_dir: str
    deep: bool
    checks: list[Check]

    def count(self, status: Status) -> int:
        return sum(c.status == status for c in self.checks)

    def ok(self, strict: bool = False) -> bool:
        return self.count("FAIL") == 0 and not (strict and self.count("WARN"))

    def by_name(self, name: str) -> Check:
        """The first check called ``name``. Raises KeyError if none ran."""
        for c in self.checks:
            if c.name == name:
                return c
        raise KeyError(name)

    def to_dict(self, strict: bool = False) -> dict[str, Any]:
        return {
            "release_dir": self.release_dir,
            "mode": "deep" if self.deep else "fast",
            "ok": self.ok(strict),
            "passed": self.count("PASS"),
            "failed": self.count("FAIL"),
            "warnings": self.count("WARN"),
            "checks": [c.to_dict() for c in self.checks],
        }


__all__ = ["Check", "Status", "ValidationReport", "check"]
