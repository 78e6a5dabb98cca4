"""Templates compute the known golds; the config is strict and its errors say file:line."""

from __future__ import annotations

import json
import math
from datetime import date
from decimal import Decimal
from pathlib import Path

import pytest

from drsearch.benchmark.generate.drbencher.config import load_config
from drsearch.benchmark.generate.drbencher.errors import ConfigError
from drsearch.benchmark.generate.drbencher.templates import (
    TEMPLATES,
    TemplateError,
    barometric_pressure_hpa,
    boiling_point_c,
    compute_gold,
    draw_params,
    haversine_km,
    pendulum_drift_s_per_day,
    values_from_json,
    values_to_json,
    verify_gold,
)

from ....helpers import DATA

ZUGSPITZE = {"P2044": Decimal("2962"), "P625": (47.421111, 10.985278)}
TOKYO = {"P1082": Decimal("14192184"), "P2046": Decimal("2194.07"), "P625": (35.689722, 139.692222)}
BERLIN = {"P625": (52.52, 13.405)}
PARIS = {"P625": (48.856944, 2.351389)}
GDR = {"P571": date(1949, 10, 7), "P576": date(1990, 10, 3)}


def test_the_zugspitze_pendulum_drift_is_40_17_seconds_a_day() -> None:
    gold = compute_gold(TEMPLATES["pendulum_drift"], [ZUGSPITZE], {})
    assert gold.value == Decimal("40.17") and gold.label == "40.17 s/day" and gold.unit == "s/day"
    # the formula as the issue states it, and its closed form 86,400·h/R
    g_h = 9.81 * (6_371_000 / (6_371_000 + 2962)) ** 2
    assert math.isclose(pendulum_drift_s_per_day(2962), 86_400 * (math.sqrt(9.81 / g_h) - 1), rel_tol=1e-12)
    assert math.isclose(pendulum_drift_s_per_day(2962), 86_400 * 2962 / 6_371_000, rel_tol=1e-9)
    assert "2,962" in gold.formula


def test_atmosphere_templates_at_sea_level_and_on_the_zugspitze() -> None:
    assert barometric_pressure_hpa(0) == pytest.approx(1013.25)
    assert boiling_point_c(0) == pytest.approx(100.0, abs=0.05)
    assert compute_gold(TEMPLATES["barometric_pressure"], [ZUGSPITZE], {}).label == "704.5"
    assert compute_gold(TEMPLATES["boiling_point"], [ZUGSPITZE], {}).label == "90.2 °C"
    with pytest.raises(TemplateError, match="troposphere"):
        barometric_pressure_hpa(50_000)


def test_density_growth_distance_and_dates() -> None:
    assert compute_gold(TEMPLATES["population_density"], [TOKYO], {}).label == "6468.4"
    assert haversine_km(BERLIN["P625"], PARIS["P625"]) == pytest.approx(877.5, abs=1.0)  # the textbook ~878 km
    assert compute_gold(TEMPLATES["haversine_distance"], [BERLIN, PARIS], {}).label.endswith(" km")
    assert compute_gold(TEMPLATES["date_difference"], [GDR], {}).label == "14971 days"
    growth = TEMPLATES["compound_growth"]
    params = draw_params(growth, 20260811, "Q1490:compound_growth")
    assert params == draw_params(growth, 20260811, "Q1490:compound_growth")  # seeded by (seed, candidate id)
    others = {json.dumps(draw_params(growth, s, "Q1490:compound_growth")) for s in range(20)}
    assert len(others) > 1
    expected = Decimal(repr(14192184 * (1 + params["rate_percent"] / 100) ** params["years"])).quantize(Decimal(1))
    assert compute_gold(growth, [TOKYO], params).value == expected


def test_a_template_refuses_values_it_cannot_use_and_verify_reexecutes() -> None:
    with pytest.raises(TemplateError, match="lacks P2046"):
        compute_gold(TEMPLATES["population_density"], [{"P1082": Decimal(5)}], {})
    with pytest.raises(TemplateError, match="takes 2 entities"):
        compute_gold(TEMPLATES["haversine_distance"], [BERLIN], {})
    with pytest.raises(TemplateError, match="not positive"):
        compute_gold(TEMPLATES["population_density"], [{"P1082": Decimal(5), "P2046": Decimal(0)}], {})
    assert verify_gold(TEMPLATES["pendulum_drift"], [ZUGSPITZE], {}, "40.17 s/day")
    assert not verify_gold(TEMPLATES["pendulum_drift"], [ZUGSPITZE], {}, "40.18 s/day")
    assert not verify_gold(TEMPLATES["pendulum_drift"], [{}], {}, "40.17 s/day")
    assert values_from_json(values_to_json({**ZUGSPITZE, **GDR})) == {**ZUGSPITZE, **GDR}


def test_the_shipped_config_loads() -> None:
    config, articles = load_config(DATA / "kg/gen.json")
    assert articles == (DATA / "kg/docs.jsonl").resolve()
    assert config.topics[0].min_sitelinks == 20 and config.max_per_entity == 3
    # every template of the KG domains (the API domains' templates are data/domains/gen.json's)
    kg_templates = {n for n, t in TEMPLATES.items() if not set(t.domains) & {"biochemistry", "financial", "security"}}
    assert config.diversity.min_distance == 0.30 and set(config.templates) == kg_templates


@pytest.mark.parametrize(("edit", "line", "message"), [
    (lambda t: t.replace('"min_sitelinks": 20, "target": 10, "seed_qids"', '"min_sitelink": 20, "target": 10, '
                         '"seed_qids"'), 7, "topics.0.min_sitelink: Extra inputs are not permitted"),
    (lambda t: t.replace('"properties": ["P2044", "P625"]', '"properties": ["P2044", "P9999"]'), 6,
     "unknown property P9999"),
    (lambda t: t.replace('"compound_growth",', '"compound_interest",'), 15, "unknown template compound_interest"),
    (lambda t: t.replace('"max_per_entity": 3,', '"max_per_entity": 3,,'), 17, "invalid JSON"),
    (lambda t: t.replace('"seed": 20260811,', '"seed": 20260811, "seed": 1,'), 2, "duplicate key 'seed'"),
    (lambda t: t.replace('"articles": "docs.jsonl"', '"articles": "nope.jsonl"'), 4, "no such file"),
    (lambda t: t.replace('"max_per_entity": 3,', '"max_per_entity": 3, "v2": {"search_url": "127.0.0.1:8000"},'),
     17, "v2.search_url: '127.0.0.1:8000' is not an http:// or https:// URL"),
    (lambda t: t.replace('"max_per_entity": 3,', '"max_per_entity": 3, "v1": {"search_url": "http://x"},'), 17,
     "v1.search_url: Extra inputs are not permitted"),  # V1 is closed-book: no corpus to serve
])
def test_config_errors_name_the_file_and_line(tmp_path: Path, edit, line: int, message: str) -> None:  # type: ignore[no-untyped-def]
    text = (DATA / "kg/gen.json").read_text()
    changed = edit(text)
    assert changed != text
    path = tmp_path / "gen.json"
    path.write_text(changed)
    (tmp_path / "docs.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert e.value.message.startswith(f"{path}:{line}: ") and message in e.value.message, e.value.message
    assert e.value.exit_code == 2


def test_the_units_tables_convert_exactly_and_refuse_what_they_lack() -> None:
    from drsearch.benchmark.generate.drbencher.queries import UnknownUnitError, parse_value

    wd = "http://www.wikidata.org/entity/"
    assert parse_value("P2044", {"value": "+9718"}, wd + "Q3710") == Decimal("2962.0464")
    assert parse_value("P2044", {"value": "2.962"}, wd + "Q828224") == Decimal("2962")
    assert parse_value("P2046", {"value": "1"}, wd + "Q232291") == Decimal("2.589988110336")
    assert parse_value("P2046", {"value": "247.105"}, wd + "Q81292") == Decimal("247.105") * Decimal("0.0040468564224")
    assert parse_value("P2046", {"value": "891120000"}, wd + "Q25343") == Decimal("891.12")
    assert parse_value("P1082", {"value": "131961"}, wd + "Q199") == Decimal("131961")
    for pid, unit in (("P1082", wd + "Q11573"), ("P2044", None), ("P2044", "metre")):
        with pytest.raises(UnknownUnitError, match=f"^{pid} .* is stated in unit "):
            parse_value(pid, {"value": "1"}, unit)


def test_the_shipped_endpoints_take_their_ports_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRSEARCH_KG_PORT", raising=False)
    monkeypatch.setenv("DRSEARCH_MODEL_PORT", "")  # empty: the default, as in the shell's ${X:-d}
    config, _ = load_config(DATA / "kg/gen.json")
    assert config.kg.endpoint == "http://127.0.0.1:8765/sparql"
    assert config.generator.base_url == "http://127.0.0.1:8001/v1"
    monkeypatch.setenv("DRSEARCH_KG_PORT", "18765")
    monkeypatch.setenv("DRSEARCH_MODEL_PORT", "18001")
    config, _ = load_config(DATA / "kg/gen.json")
    assert config.kg.endpoint == "http://127.0.0.1:18765/sparql"
    assert config.generator.base_url == "http://127.0.0.1:18001/v1"


def test_an_unset_variable_without_a_default_names_its_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DRSEARCH_NO_SUCH_PORT", raising=False)
    path = tmp_path / "gen.json"
    path.write_text((DATA / "kg/gen.json").read_text().replace("${DRSEARCH_MODEL_PORT:-8001}",
                                                               "${DRSEARCH_NO_SUCH_PORT}"))
    (tmp_path / "docs.jsonl").write_text("{}\n")
    with pytest.raises(ConfigError) as e:
        load_config(path)
    assert e.value.message == (f"{path}:16: generator.base_url: ${{DRSEARCH_NO_SUCH_PORT}} is not set "
                               "(set it, or write ${DRSEARCH_NO_SUCH_PORT:-DEFAULT})")
    assert e.value.exit_code == 2
