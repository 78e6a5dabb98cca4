"""``drsearch serve`` reads its blocklist and opens the engine once in the parent; each worker
opens its own engine and refuses a blocklist file whose bytes changed after the parent read it."""

from __future__ import annotations

from pathlib import Path

import pytest

from drsearch.contract import BlocklistError
from drsearch.index import BlockList, Engine
from drsearch.server import ServeConfig, app_from_config, verify_corpus


def test_a_worker_refuses_a_blocklist_that_changed_after_serve_read_it(sample_index: Path, tmp_path: Path,
                                                                       blocked_docid: str) -> None:
    listed = tmp_path / "blocked.txt"
    listed.write_text(blocked_docid + "\n")
    read = BlockList.from_file(listed)
    config = ServeConfig(database=sample_index, blocked_docids=listed, blocklist_sha256=read.sha256)
    app_from_config(config).state.engine.close()  # the same bytes: the worker starts
    listed.write_text(blocked_docid + "\n# edited after the parent read it\n")
    with pytest.raises(BlocklistError, match="changed since drsearch serve read it"):
        app_from_config(config)


def test_the_parent_makes_every_check_on_one_engine(sample_index: Path, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[Path] = []
    real_open = Engine.open.__func__  # type: ignore[attr-defined]

    def counting_open(cls: type[Engine], path: Path, *args: object, **kwargs: object) -> Engine:
        opened.append(Path(path))
        return real_open(cls, path, *args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(Engine, "open", classmethod(counting_open))
    partial = BlockList.from_bytes(b"not-in-this-corpus\n")
    with pytest.raises(BlocklistError, match="1 blocked docids listed, 0 in this corpus"):
        verify_corpus(sample_index, "fast", partial, require_complete=True)
    assert len(opened) == 1
    verify_corpus(sample_index, "fast", partial)  # --allow-missing-blocked: no completeness check
    assert len(opened) == 2
