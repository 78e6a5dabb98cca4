"""The report's rows as files: ``episodes.csv`` / ``tool_calls.csv`` always, and the same rows as
``episodes.parquet`` / ``tool_calls.parquet`` when pyarrow is installed (the ``report`` extra).

The columns are fixed (:func:`.load.episode_row`, :func:`.load.call_rows`); CSV is written with
``\\n`` line ends and ``None`` as an empty field, Parquet with an explicit schema, so the same
rows give the same bytes."""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...contract.atomic import write_bytes_atomic

EPISODE_TYPES = {"index": "int", "correct": "bool", "score": "float", "cci": "int", "cci_E": "int",
                 "cci_P": "int", "tool_calls": "int", "malformed_tool_calls": "int", "prompt_tokens": "int",
                 "completion_tokens": "int", "total_tokens": "int", "turns": "int", "wall_s": "float",
                 "cost": "float", "leak_turn": "int"}
CALL_TYPES = {"turn": "int", "call": "int", "malformed": "bool", "n_documents": "int"}
"""Column types other than string (the rest are strings; any may be null)."""


def csv_bytes(rows: Sequence[dict[str, Any]], columns: Sequence[str]) -> bytes:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for row in rows:
        writer.writerow(["" if row[c] is None else row[c] for c in columns])
    return buf.getvalue().encode("utf-8")


def parquet_bytes(rows: Sequence[dict[str, Any]], columns: Sequence[str], types: dict[str, str]) -> bytes:
    """The rows as one Parquet table (ImportError without pyarrow)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.parquet as pq  # type: ignore[import-untyped]

    kinds = {"int": pa.int64(), "bool": pa.bool_(), "float": pa.float64()}
    schema = pa.schema([(c, kinds.get(types.get(c, ""), pa.string())) for c in columns])
    data = {c: [None if r[c] is None else (r[c] if c in types else str(r[c])) for r in rows] for c in columns}
    table = pa.Table.from_pydict(data, schema=schema)
    sink = pa.BufferOutputStream()
    pq.write_table(table, sink, compression="zstd")
    return bytes(sink.getvalue().to_pybytes())


def write_frames(out: Path, episodes: Sequence[dict[str, Any]], calls: Sequence[dict[str, Any]],
                 episode_columns: Sequence[str], call_columns: Sequence[str]) -> list[Path]:
    """Write the CSV files, and the Parquet files when pyarrow is there; the paths written."""
    written = []
    for name, rows, columns in (("episodes", episodes, episode_columns), ("tool_calls", calls, call_columns)):
        path = out / f"{name}.csv"
        write_bytes_atomic(path, csv_bytes(rows, columns))
        written.append(path)
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return written
    for name, rows, columns, types in (("episodes", episodes, episode_columns, EPISODE_TYPES),
                                       ("tool_calls", calls, call_columns, CALL_TYPES)):
        path = out / f"{name}.parquet"
        write_bytes_atomic(path, parquet_bytes(rows, columns, types))
        written.append(path)
    return written


__all__ = ["CALL_TYPES", "EPISODE_TYPES", "csv_bytes", "parquet_bytes", "write_frames"]
