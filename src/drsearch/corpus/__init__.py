"""corpus layer (see DESIGN.md): documents from elsewhere, handed to the index build.

Public API::

    inspect_source(path)                      -> SourceInfo (tables, columns, row counts)
    import_corpus(source, out, mapping)       -> BuildReport (SQLite table or JSONL)
    read_sqlite_documents(path, mapping)      -> documents of one SQLite table
"""

from .importer import (
    ColumnInfo,
    ColumnMapping,
    SourceInfo,
    TableInfo,
    detect_format,
    import_corpus,
    inspect_source,
    quote_identifier,
    read_sqlite_documents,
)

__all__ = [
    "ColumnInfo",
    "ColumnMapping",
    "SourceInfo",
    "TableInfo",
    "detect_format",
    "import_corpus",
    "inspect_source",
    "quote_identifier",
    "read_sqlite_documents",
]
