"""A release's documents: README.md and TERMS.md from templates the user completes, and
LICENSE-CODE where code ships (the DR-256 card's layout; docs/RELEASE.md, "Release documents").

A template is Markdown with two kinds of ``{{…}}`` marks:

- ``{{FILL: what to write}}``: a **placeholder** the user replaces with their own text (the
  licence of the questions, a takedown contact, what to cite). A release is not assembled
  while one remains (:class:`PlaceholderError`, exit 2) unless placeholders are allowed;
  ``validate`` warns about any left in a release.
- ``{{field}}``: a fact of the release, filled in at assembly from what was built (see
  :data:`FIELDS`); any other name is an error naming the file and the mark.

:func:`write_templates` copies the bundled templates (``release/templates/``) for the user
to complete; ``release assemble --readme F --terms F`` (and ``construct select``) render
the completed ones into the release.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from ..contract import InvalidInputError

README, TERMS, LICENSE_CODE = "README.md", "TERMS.md", "LICENSE-CODE"
CODE_DIR = "tools"
"""Where a release's packaged utilities go: any file under it is code, and needs LICENSE-CODE."""
BASELINES = "baselines"
"""The fresh reference runs kept for protocol checks (construct select: the calibration rollouts)."""
FIELDS = ("name", "revision", "questions", "tiers", "documents", "chunks", "blocked_docids",
          "content_identity", "questions_sha256")
"""The release facts a template may name as ``{{field}}``."""
_MARK = re.compile(r"\{\{\s*(.*?)\s*\}\}", re.S)
_FILL = "FILL:"


class PlaceholderError(InvalidInputError):
    """A release document still holds ``{{FILL: …}}`` placeholders (exit 2)."""

    error_type = "placeholders_remain"


@dataclass(frozen=True)
class ReleaseDocuments:
    """What a release's documents come from: the completed README and TERMS (None: the
    bundled template, which then must be allowed its placeholders), whether placeholders may
    remain, and a directory of packaged utilities to ship as ``tools/`` with LICENSE-CODE
    (``code_license``: that licence's text; None: Apache-2.0, drsearch's own)."""

    readme: Path | None = None
    terms: Path | None = None
    allow_placeholders: bool = False
    tools: Path | None = None
    code_license: Path | None = None

    @property
    def wanted(self) -> bool:
        """Whether README and TERMS are written at all (given, or templates allowed)."""
        return self.readme is not None or self.terms is not None or self.allow_placeholders

    def check(self) -> None:
        """Before anything is built: the files read, their marks known, no placeholder left
        unless allowed, the tools a directory. InvalidInputError / PlaceholderError."""
        if self.wanted:
            for name, path in ((README, self.readme), (TERMS, self.terms)):
                text = read_template(name, path)
                left = placeholders(text)
                if left and not self.allow_placeholders:
                    where = path if path is not None else f"the bundled {name} template"
                    raise PlaceholderError(
                        f"{where}: {len(left)} placeholder(s) to complete, e.g. {{{{{left[0]}}}}}; complete "
                        f"them (`drsearch release templates --out DIR` writes the templates), or give "
                        "--allow-placeholders")
        if self.code_license is not None and self.tools is None:
            raise InvalidInputError("--code-license goes with --tools (LICENSE-CODE ships with code)")
        if self.tools is not None and not self.tools.is_dir():
            raise InvalidInputError(f"--tools {self.tools}: not a directory")
        if self.code_license is not None and not self.code_license.is_file():
            raise InvalidInputError(f"--code-license {self.code_license}: no such file")


def bundled(name: str) -> str:
    return resources.files("drsearch.release").joinpath("templates", name).read_text(encoding="utf-8")


def read_template(name: str, path: Path | None) -> str:
    """The template text (``path``, else the bundled one), its marks checked."""
    if path is None:
        text = bundled(name)
    else:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            raise InvalidInputError(f"{path}: cannot read ({getattr(e, 'strerror', None) or e})") from None
    unknown = [m for m in _MARK.findall(text) if not m.startswith(_FILL) and m not in FIELDS]
    if unknown:
        raise InvalidInputError(f"{path or name}: unknown field {{{{{unknown[0]}}}}} (fields: "
                                f"{', '.join(FIELDS)}; {{{{FILL: …}}}} marks text to complete)")
    return text


def placeholders(text: str) -> list[str]:
    """The ``FILL: …`` placeholders left in ``text``, in order (whitespace collapsed)."""
    return [" ".join(m.split()) for m in _MARK.findall(text) if m.startswith(_FILL)]


def render(text: str, facts: dict[str, Any]) -> str:
    """``text`` with every ``{{field}}`` replaced by its fact; placeholders kept as they are."""
    def fill(m: re.Match[str]) -> str:
        key = m.group(1)
        return m.group(0) if key.startswith(_FILL) else str(facts[key])

    return _MARK.sub(fill, text)


def write_documents(root: Path, docs: ReleaseDocuments, facts: dict[str, Any]) -> None:
    """README.md and TERMS.md (when wanted), and tools/ with LICENSE-CODE (when given), into
    the release ``root``. :meth:`ReleaseDocuments.check` was called before the build."""
    if docs.wanted:
        for name, path in ((README, docs.readme), (TERMS, docs.terms)):
            (root / name).write_text(render(read_template(name, path), facts), encoding="utf-8")
    if docs.tools is not None:
        shutil.copytree(docs.tools, root / CODE_DIR, dirs_exist_ok=True)
        if docs.code_license is not None:
            shutil.copyfile(docs.code_license, root / LICENSE_CODE)
        else:
            (root / LICENSE_CODE).write_text(bundled(LICENSE_CODE), encoding="utf-8")


def write_templates(out: str | Path) -> list[Path]:
    """Copy the bundled README.md and TERMS.md templates into directory ``out`` (made if
    missing; existing files there are not replaced: InvalidInputError)."""
    where = Path(out)
    targets = [where / README, where / TERMS]
    if existing := [p for p in targets if p.exists()]:
        raise InvalidInputError(f"{existing[0]} exists: not replaced (complete it, or remove it first)")
    if where.exists() and not where.is_dir():
        raise InvalidInputError(f"{where} exists and is not a directory")
    where.mkdir(parents=True, exist_ok=True)
    for path in targets:
        path.write_text(bundled(path.name), encoding="utf-8")
    return targets


__all__ = ["BASELINES", "CODE_DIR", "FIELDS", "LICENSE_CODE", "README", "TERMS", "PlaceholderError",
           "ReleaseDocuments", "placeholders", "read_template", "render", "write_documents",
           "write_templates"]
