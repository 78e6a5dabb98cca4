"""The offline recipe's ``drsearch serve`` helper when the server cannot start."""

from __future__ import annotations

from pathlib import Path

import pytest
from offline_recipe.serving import ServeError, drsearch_serve


def test_a_server_that_exits_at_start_is_a_serve_error_with_its_log(tmp_path: Path) -> None:
    """The server exits at once (not a database): the ServeError naming why reaches the caller;
    stopping the already-exited server must not replace it (killpg on a dead group raises)."""
    bad = tmp_path / "x.sqlite3"
    bad.write_bytes(b"not a database")
    with pytest.raises(ServeError, match="not a drsearch index"), drsearch_serve(bad, tmp_path / "log"):
        pass
