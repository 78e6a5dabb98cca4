"""The biochemistry, financial and security templates: golds recomputed by hand from the fixture's
public values (data/domains/README.md), their units and tolerances (2 % as the paper grades
every domain but history), and the config that selects the domains."""

from __future__ import annotations

import json
from datetime import date
from decimal import ROUND_HALF_UP, Decimal
from pathlib import Path

import pytest

from drsearch.benchmark.generate.drbencher.config import load_config
from drsearch.benchmark.generate.drbencher.errors import ConfigError
from drsearch.benchmark.generate.drbencher.templates import TEMPLATES, compute_gold, draw_params
from drsearch.benchmark.numeric import answer_quantity

ASPIRIN = {"pubchem:molecular_weight": Decimal("180.16")}
P53 = {"uniprot:length": Decimal(393), "uniprot:mass": Decimal(43653)}
APPLE = {"sec:fiscal_year": Decimal(2023), "sec:net_income_fy0": Decimal(96995000000),
         "sec:revenue_fy0": Decimal(383285000000), "sec:revenue_fy2": Decimal(365817000000)}
LOG4SHELL = {"epss:probability": Decimal("0.97565"), "kev:date_added": date(2021, 12, 10),
             "kev:due_date": date(2021, 12, 24), "nvd:base_score": Decimal("10.0"),
             "nvd:published": date(2021, 12, 10)}
HEARTBLEED = {"kev:date_added": date(2022, 5, 4), "kev:due_date": date(2022, 5, 25),
              "nvd:base_score": Decimal("7.5"), "nvd:published": date(2014, 4, 7)}


def half_up(x: Decimal, places: int) -> str:
    return f"{x.quantize(Decimal(1).scaleb(-places), rounding=ROUND_HALF_UP):f}"


def test_biochemistry_golds_by_hand() -> None:
    g = compute_gold(TEMPLATES["molar_amount"], [ASPIRIN], {"mass_g": 1})
    assert g.label == "5.55" and g.unit == "mmol" and g.tolerance == "0.02"  # 1 g / 180.16 g/mol = 5.5506 mmol
    g = compute_gold(TEMPLATES["molarity"], [ASPIRIN], {"mass_g": 2, "volume_l": 0.5})
    assert g.label == "0.0222"  # 2 / 180.16 / 0.5 = 0.02220
    g = compute_gold(TEMPLATES["mean_residue_mass"], [P53], {})
    assert g.label == half_up(Decimal(43653) / Decimal(393), 2) == "111.08" and g.unit == "Da"


def test_financial_golds_by_hand_and_the_fiscal_years_the_question_states() -> None:
    t = TEMPLATES["revenue_cagr"]
    params = draw_params(t, 1, "Q312:revenue_cagr", [APPLE])
    assert params == {"fiscal_year_end": 2023, "fiscal_year_start": 2021}
    g = compute_gold(t, [APPLE], params)
    growth = (Decimal(383285000000) / Decimal(365817000000)).sqrt() - 1
    assert g.label == half_up(growth * 100, 2) + " %" == "2.36 %"
    t = TEMPLATES["net_margin"]
    assert draw_params(t, 1, "Q312:net_margin", [APPLE]) == {"fiscal_year": 2023}
    g = compute_gold(t, [APPLE], {"fiscal_year": 2023})
    assert g.label == "25.31 %"  # 96,995 / 383,285 = 25.306 %


def test_security_golds_by_hand() -> None:
    assert compute_gold(TEMPLATES["kev_remediation_window"], [LOG4SHELL], {}).label == "14 days"
    assert compute_gold(TEMPLATES["days_to_kev"], [LOG4SHELL], {}).label == "0 days"
    # 2014-04-07 → 2022-04-07: 8 × 365 + 2 leap days = 2922; → 2022-05-04: + 27
    assert compute_gold(TEMPLATES["days_to_kev"], [HEARTBLEED], {}).label == "2949 days"
    assert compute_gold(TEMPLATES["expected_exploited_hosts"], [LOG4SHELL], {"hosts": 200}).label == "195.1"
    g = compute_gold(TEMPLATES["severity_weighted_exposure"], [LOG4SHELL], {"hosts": 10})
    assert g.label == "97.57"  # 10.0 × 0.97565 × 10 = 97.565, half up


def test_every_template_of_the_new_domains_grades_at_two_percent_in_a_unit_the_grader_reads() -> None:
    for t in TEMPLATES.values():
        if set(t.domains) & {"biochemistry", "financial", "security"}:
            assert t.tolerance == "0.02", t.name
            if t.label_unit:  # the label's unit is one the numeric grader converts
                assert answer_quantity(f"1 {t.label_unit}").unit == t.label_unit, t.name


def _config(tmp_path: Path, topics: list[dict[str, object]], templates: list[str]) -> Path:
    (tmp_path / "docs.jsonl").write_text("")
    path = tmp_path / "gen.json"
    path.write_text(json.dumps({
        "seed": 1, "kg": {"endpoint": "http://127.0.0.1:1/sparql"}, "articles": "docs.jsonl",
        "topics": topics, "templates": templates,
        "generator": {"model": "m", "base_url": "http://127.0.0.1:1/v1"}}, indent=1))
    return path


def test_the_config_selects_the_api_domains_with_their_entry_points(tmp_path: Path) -> None:
    config, _ = load_config(_config(tmp_path, [
        {"domain": "financial", "properties": ["sec:revenue_fy0"], "target": 2,
         "entry": {"kind": "ticker", "ids": ["AAPL", "MSFT"]}},
        {"domain": "security", "properties": ["kev:date_added"], "target": 1,
         "entry": {"kind": "cve", "ids": ["CVE-2021-44228"], "wikidata_property": "P3587"}}],
        ["revenue_cagr", "kev_remediation_window"]))
    assert [t.entry.id_property() for t in config.topics if t.entry] == ["P5531", "P3587"]
    assert config.domain_apis.nvd.base_url == "https://services.nvd.nist.gov"


@pytest.mark.parametrize(("topic", "template", "says"), [
    ({"domain": "astrology", "types": ["Q1"], "properties": ["P2044"], "target": 1}, "boiling_point",
     "domain"),
    ({"domain": "financial", "properties": ["sec:revenue_fy0"], "target": 1}, "revenue_cagr",
     "a financial topic needs an entry"),
    ({"domain": "security", "properties": ["kev:date_added"], "target": 1,
      "entry": {"kind": "ticker", "ids": ["AAPL"]}}, "days_to_kev", "entry kind ticker is not one of security's"),
    ({"domain": "security", "properties": ["kev:date_added"], "target": 1,
      "entry": {"kind": "cve", "ids": ["CVE-21-1"]}}, "days_to_kev", "'CVE-21-1' is not a cve"),
    ({"domain": "security", "properties": ["P2044"], "target": 1,
      "entry": {"kind": "cve", "ids": ["CVE-2021-44228"]}}, "days_to_kev", "P2044: not a property of the security"),
    ({"domain": "financial", "properties": ["sec:revenue_fy0"], "target": 1,
      "entry": {"kind": "ticker", "ids": ["AAPL"]}}, "revenue_cagr_typo", "unknown template revenue_cagr_typo"),
])
def test_a_bad_domain_topic_is_one_config_error_with_its_line(tmp_path: Path, topic: dict[str, object],
                                                               template: str, says: str) -> None:
    with pytest.raises(ConfigError, match=r"gen\.json:\d+: .*" + says.replace("(", r"\(")):
        load_config(_config(tmp_path, [topic], [template]))
