"""The modules here read chunk texts from the file's pages (the kernel's text readers:
read_texts, texts_snippets, search_hits): they run on files that store every chunk's text
(schema version 2, the root conftest's ``*_stored`` fixtures), which these fixtures put in the
place of the default (version-4: chunks as spans of the document texts) indexes of the same
names."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def sample_index(sample_index_stored: Path) -> Path:
    return sample_index_stored


@pytest.fixture(scope="session")
def cran_index(cran_index_stored: Path) -> Path:
    return cran_index_stored


@pytest.fixture(scope="session")
def cran_small_chunks(cran_small_chunks_stored: Path) -> Path:
    return cran_small_chunks_stored
