"""The OpenBioRQ-style generator's public surface changes only on purpose."""

from __future__ import annotations

import drsearch.benchmark.generate.openbiorq as obrq


def test_public_api() -> None:
    assert set(obrq.__all__) == {
        "AUDIT_SAMPLE", "DEFAULT_TRACKS", "GENERATOR", "ID_PREFIXES", "PUBLIC_APIS", "REDRAFTS", "STAGES", "TAXONOMY",
        "VAGUE_PHRASES", "OpenBioRQSettings", "Source", "UnparseableReply", "build_pipeline", "id_kind",
        "read_sources", "rubric_problems"}
    for name in obrq.__all__:
        assert getattr(obrq, name) is not None
    assert len(obrq.TAXONOMY) == 12
    assert obrq.STAGES == ("extract", "refine", "audit", "dedup", "gold", "rubric", "openness", "membership", "export")


def test_identifier_kinds() -> None:
    assert [obrq.id_kind(i) for i in ("PMID:123", "NCT01234567", "arXiv:2301.00005", "arXiv:hep-th/9901001v2",
                                      "doi:10.1/x", "DOC:a-b", "PMID:x", "NCT1", "PMC1", "arXiv:")] == [
        "pmid", "nct", "arxiv", "arxiv", "other", "other", None, None, None, None]
