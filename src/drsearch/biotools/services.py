"""The nine HTTP tools, each a client of one public API as its documentation describes it.

Request shapes (paths, parameters) and answers are the services' documented ones; every
tool returns the service's answer itself (JSON as canonical JSON, text as sent) under a
provenance line, never a paraphrase. Where a choice was ours (which endpoints a tool
offers, page sizes, the fields of a UniProt search) the description says so.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

from .errors import InvalidArgumentsError
from .schema import exactly_one
from .spec import BioTool, Outcome, Session, json_outcome, text_outcome


def _s(desc: str, max_length: int = 500, **more: Any) -> dict[str, Any]:
    return {"type": "string", "minLength": 1, "maxLength": max_length, "description": desc, **more}


def _n(desc: str, default: int, maximum: int) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": maximum, "default": default, "description": desc}


def _obj(props: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": False, "properties": props, "required": list(required)}


def _named(tool: str, *names: str) -> Any:
    def refine(args: dict[str, Any]) -> None:
        exactly_one(tool, args, *names)

    return refine


# -- NCBI E-utilities: PubMed ------------------------------------------------------------

EUTILS = "/entrez/eutils"


def _pubmed(s: Session, a: dict[str, Any]) -> Outcome:
    if "pmids" in a:  # abstracts as PubMed's own text rendering
        return text_outcome(
            s.call(
                "GET",
                f"{EUTILS}/efetch.fcgi",
                "text",
                {"db": "pubmed", "id": ",".join(a["pmids"]), "rettype": "abstract", "retmode": "text"},
            )
        )
    found = s.call(
        "GET",
        f"{EUTILS}/esearch.fcgi",
        "json",
        {"db": "pubmed", "retmax": a["max_results"], "retmode": "json", "term": a["query"]},
    )
    if not found.ok:
        return json_outcome(found)
    result = json.loads(found.text).get("esearchresult", {})
    ids = [str(i) for i in result.get("idlist", [])]
    answer: dict[str, Any] = {"count": result.get("count"), "idlist": ids, "summaries": {}}
    if ids:
        summary = s.call(
            "GET", f"{EUTILS}/esummary.fcgi", "json", {"db": "pubmed", "id": ",".join(ids), "retmode": "json"}
        )
        if not summary.ok:
            return json_outcome(summary)
        answer["summaries"] = json.loads(summary.text).get("result", {})
    return Outcome(
        True, 200, json.dumps(answer, sort_keys=True, separators=(",", ":"), ensure_ascii=False), "json"
    )


PUBMED = BioTool(
    name="pubmed",
    service="NCBI E-utilities (PubMed)",
    description=(
        "Search PubMed (NCBI E-utilities esearch + esummary: PMIDs with title, journal, date, "
        "authors) with `query` in PubMed syntax, or read abstracts of given `pmids` (efetch)."
    ),
    parameters=_obj(
        {
            "query": _s("PubMed query, e.g. 'BNT162b2 AND efficacy[tiab]'"),
            "pmids": {
                "type": "array",
                "minItems": 1,
                "maxItems": 20,
                "items": {"type": "string", "pattern": "[0-9]{1,9}"},
                "description": "PMIDs whose abstracts to read",
            },
            "max_results": _n("PMIDs a search returns", 5, 20),
        }
    ),
    endpoints=(f"GET {EUTILS}/esearch.fcgi", f"GET {EUTILS}/esummary.fcgi", f"GET {EUTILS}/efetch.fcgi"),
    base_url="https://eutils.ncbi.nlm.nih.gov",
    run=_pubmed,
    rate_per_s=3.0,
    rate_with_key_per_s=10.0,
    limiter="ncbi-eutils",
    key_env="NCBI_API_KEY",
    refine=_named("pubmed", "query", "pmids"),
    docs="https://www.ncbi.nlm.nih.gov/books/NBK25501/",
)


# -- ClinicalTrials.gov API v2 -------------------------------------------------------------


def _trials(s: Session, a: dict[str, Any]) -> Outcome:
    if "nct_id" in a:
        return json_outcome(s.call("GET", f"/api/v2/studies/{a['nct_id']}", "json", {"format": "json"}))
    return json_outcome(
        s.call(
            "GET",
            "/api/v2/studies",
            "json",
            {"format": "json", "pageSize": a["max_results"], "query.term": a["query"]},
        )
    )


CLINICALTRIALS = BioTool(
    name="clinicaltrialsgov",
    service="ClinicalTrials.gov API v2",
    description=(
        "Search ClinicalTrials.gov (API v2 /studies, `query` as query.term: conditions, drugs, "
        "sponsors, NCT numbers) or read one study record by `nct_id`."
    ),
    parameters=_obj(
        {
            "query": _s("free-text search terms"),
            "nct_id": {"type": "string", "pattern": "NCT[0-9]{8}", "description": "e.g. NCT04368728"},
            "max_results": _n("studies a search returns", 5, 20),
        }
    ),
    endpoints=("GET /api/v2/studies", "GET /api/v2/studies/{nctId}"),
    base_url="https://clinicaltrials.gov",
    run=_trials,
    rate_per_s=50 / 60,
    limiter="clinicaltrials",
    refine=_named("clinicaltrialsgov", "query", "nct_id"),
    docs="https://clinicaltrials.gov/data-api/api",
)


# -- openFDA ---------------------------------------------------------------------------------

OPENFDA_ENDPOINTS = ("drug/label", "drug/event", "drug/enforcement", "drug/drugsfda", "device/event")


def _openfda(s: Session, a: dict[str, Any]) -> Outcome:
    return json_outcome(
        s.call("GET", f"/{a['endpoint']}.json", "json", {"limit": a["limit"], "search": a["search"]})
    )


OPENFDA = BioTool(
    name="openfda",
    service="openFDA",
    description=(
        "Query openFDA: drug labels (drug/label), adverse event reports (drug/event), recalls "
        "(drug/enforcement), approvals (drug/drugsfda), device events. `search` uses openFDA "
        "syntax, e.g. 'openfda.generic_name:\"aspirin\"'."
    ),
    parameters=_obj(
        {
            "endpoint": {"type": "string", "enum": list(OPENFDA_ENDPOINTS), "default": "drug/label"},
            "search": _s("openFDA search expression"),
            "limit": _n("records returned", 3, 20),
        },
        ("search",),
    ),
    endpoints=tuple(f"GET /{e}.json" for e in OPENFDA_ENDPOINTS),
    base_url="https://api.fda.gov",
    run=_openfda,
    rate_per_s=4.0,
    limiter="openfda",
    key_env="OPENFDA_API_KEY",
    rate_with_key_per_s=4.0,
    docs="https://open.fda.gov/apis/",
)


# -- Open Targets Platform GraphQL -------------------------------------------------------------


def _opentargets(s: Session, a: dict[str, Any]) -> Outcome:
    return json_outcome(
        s.call("POST", "/api/v4/graphql", "json", body={"query": a["query"], "variables": a["variables"]})
    )


OPENTARGETS = BioTool(
    name="opentargets",
    service="Open Targets Platform GraphQL API v4",
    description=(
        "Run a GraphQL query against the Open Targets Platform (targets by Ensembl id, diseases by "
        "EFO id, drugs by ChEMBL id, target-disease associations, `search(queryString:)`)."
    ),
    parameters=_obj(
        {
            "query": _s("a GraphQL query document", 5000),
            "variables": {
                "type": "object",
                "default": {},
                "maxProperties": 20,
                "description": "GraphQL variables",
            },
        },
        ("query",),
    ),
    endpoints=("POST /api/v4/graphql",),
    base_url="https://api.platform.opentargets.org",
    run=_opentargets,
    rate_per_s=5.0,
    limiter="opentargets",
    docs="https://platform-docs.opentargets.org/data-access/graphql-api",
)


# -- ChEMBL REST -------------------------------------------------------------------------------

CHEMBL_RESOURCES = ("molecule", "target", "activity", "mechanism", "drug_indication", "assay", "document")
CHEMBL = "/chembl/api/data"


def _chembl(s: Session, a: dict[str, Any]) -> Outcome:
    r = a["resource"]
    if "chembl_id" in a:
        return json_outcome(s.call("GET", f"{CHEMBL}/{r}/{a['chembl_id']}.json", "json"))
    if "query" in a:
        return json_outcome(
            s.call("GET", f"{CHEMBL}/{r}/search.json", "json", {"limit": a["limit"], "q": a["query"]})
        )
    return json_outcome(s.call("GET", f"{CHEMBL}/{r}.json", "json", {**a["filters"], "limit": a["limit"]}))


def _chembl_refine(a: dict[str, Any]) -> None:
    exactly_one("chembl", a, "chembl_id", "query", "filters")
    if "filters" in a and "limit" in a["filters"]:
        raise InvalidArgumentsError("chembl: filters: 'limit' is its own argument")


CHEMBL_TOOL = BioTool(
    name="chembl",
    service="ChEMBL REST API",
    description=(
        "Read ChEMBL: a record by `chembl_id` (e.g. molecule CHEMBL25), a free-text `query` "
        "(/search), or records matching `filters` (Django-style, e.g. "
        '{"molecule_chembl_id": "CHEMBL25"} on activity or mechanism).'
    ),
    parameters=_obj(
        {
            "resource": {"type": "string", "enum": list(CHEMBL_RESOURCES), "default": "molecule"},
            "chembl_id": {"type": "string", "pattern": "CHEMBL[0-9]{1,9}"},
            "query": _s("free-text search"),
            "filters": {
                "type": "object",
                "maxProperties": 8,
                "additionalProperties": {"type": ["string", "integer", "number"], "maxLength": 200},
            },
            "limit": _n("records returned", 5, 20),
        }
    ),
    endpoints=tuple(
        f"GET {CHEMBL}/{r}{s}"
        for r in CHEMBL_RESOURCES
        for s in ("/{chembl_id}.json", "/search.json", ".json")
    ),
    base_url="https://www.ebi.ac.uk",
    run=_chembl,
    rate_per_s=5.0,
    limiter="chembl",
    refine=_chembl_refine,
    docs="https://chembl.gitbook.io/chembl-interface-documentation/web-services/chembl-data-web-services",
)


# -- UniProt REST ----------------------------------------------------------------------------

UNIPROT_FIELDS = "accession,id,protein_name,gene_names,organism_name,length,cc_function"
ACCESSION = "[OPQ][0-9][A-Z0-9]{3}[0-9]|[A-NR-Z][0-9]([A-Z][A-Z0-9]{2}[0-9]){1,2}"


def _uniprot(s: Session, a: dict[str, Any]) -> Outcome:
    if "accession" in a:
        return json_outcome(s.call("GET", f"/uniprotkb/{a['accession']}", "json", {"format": "json"}))
    return json_outcome(
        s.call(
            "GET",
            "/uniprotkb/search",
            "json",
            {"fields": UNIPROT_FIELDS, "format": "json", "query": a["query"], "size": a["max_results"]},
        )
    )


UNIPROT = BioTool(
    name="uniprot",
    service="UniProt REST API (UniProtKB)",
    description=(
        "Search UniProtKB (`query` in UniProt syntax, e.g. 'gene:TP53 AND organism_id:9606'; "
        f"fields {UNIPROT_FIELDS}) or read a whole entry by `accession` (e.g. P04637)."
    ),
    parameters=_obj(
        {
            "query": _s("UniProt query"),
            "accession": {"type": "string", "pattern": ACCESSION},
            "max_results": _n("entries a search returns", 5, 25),
        }
    ),
    endpoints=("GET /uniprotkb/search", "GET /uniprotkb/{accession}"),
    base_url="https://rest.uniprot.org",
    run=_uniprot,
    rate_per_s=5.0,
    limiter="uniprot",
    refine=_named("uniprot", "query", "accession"),
    docs="https://www.uniprot.org/help/api_queries",
)


# -- PubChem PUG-REST ---------------------------------------------------------------------------

PUBCHEM_PROPERTIES = "MolecularFormula,MolecularWeight,CanonicalSMILES,IUPACName,InChIKey,XLogP"
PUBCHEM_OPERATIONS = {
    "property": f"property/{PUBCHEM_PROPERTIES}/JSON",
    "description": "description/JSON",
    "synonyms": "synonyms/JSON",
    "cids": "cids/JSON",
}


def _pubchem(s: Session, a: dict[str, Any]) -> Outcome:
    ident = quote(a["identifier"], safe="")
    return json_outcome(
        s.call(
            "GET", f"/rest/pug/compound/{a['namespace']}/{ident}/{PUBCHEM_OPERATIONS[a['operation']]}", "json"
        )
    )


PUBCHEM = BioTool(
    name="pubchem",
    service="PubChem PUG-REST",
    description=(
        "Look up a PubChem compound by name, CID, SMILES or InChIKey: its properties "
        f"({PUBCHEM_PROPERTIES}), description, synonyms or CIDs."
    ),
    parameters=_obj(
        {
            "namespace": {"type": "string", "enum": ["name", "cid", "smiles", "inchikey"], "default": "name"},
            "identifier": _s("e.g. aspirin, 2244", 400),
            "operation": {"type": "string", "enum": list(PUBCHEM_OPERATIONS), "default": "property"},
        },
        ("identifier",),
    ),
    endpoints=tuple(
        f"GET /rest/pug/compound/{{namespace}}/{{identifier}}/{op}" for op in PUBCHEM_OPERATIONS.values()
    ),
    base_url="https://pubchem.ncbi.nlm.nih.gov",
    run=_pubchem,
    rate_per_s=5.0,
    limiter="pubchem",
    docs="https://pubchem.ncbi.nlm.nih.gov/docs/pug-rest",
)


# -- KEGG REST (plain text) --------------------------------------------------------------------------

KEGG_OPERATIONS = ("info", "list", "find", "get", "link", "conv")
_KEGG_ARG = "[A-Za-z0-9_.:+ -]{1,200}"


def _kegg(s: Session, a: dict[str, Any]) -> Outcome:
    op = a["operation"]
    parts = [a[k] for k in ("database", "query") if k in a]
    path = "/" + "/".join([op, *(quote(p, safe=":+") for p in parts)])
    return text_outcome(s.call("GET", path, "text"))


def _kegg_refine(a: dict[str, Any]) -> None:
    op = a["operation"]
    need = {
        "info": ("database",),
        "list": ("database",),
        "get": ("query",),
        "find": ("database", "query"),
        "link": ("database", "query"),
        "conv": ("database", "query"),
    }[op]
    given = tuple(k for k in ("database", "query") if k in a)
    if given != need:
        raise InvalidArgumentsError(f"kegg: operation {op!r} takes {' and '.join(need)}")


KEGG = BioTool(
    name="kegg",
    service="KEGG REST API",
    description=(
        "Query KEGG (answers are KEGG's plain text): info/list a `database`; find `query` in a "
        "`database`; get entries (`query` 'hsa:7157' or 'hsa:7157+hsa:672'); link/conv a `query` "
        "to a target `database` (e.g. link pathway hsa:7157)."
    ),
    parameters=_obj(
        {
            "operation": {"type": "string", "enum": list(KEGG_OPERATIONS)},
            "database": {"type": "string", "pattern": "[a-z0-9_-]{1,40}"},
            "query": {"type": "string", "pattern": _KEGG_ARG},
        },
        ("operation",),
    ),
    endpoints=(
        "GET /info/{database}",
        "GET /list/{database}",
        "GET /find/{database}/{query}",
        "GET /get/{query}",
        "GET /link/{database}/{query}",
        "GET /conv/{database}/{query}",
    ),
    base_url="https://rest.kegg.jp",
    run=_kegg,
    rate_per_s=3.0,
    limiter="kegg",
    refine=_kegg_refine,
    docs="https://www.kegg.jp/kegg/rest/keggapi.html",
)


# -- NCBI Datasets v2 (genes) ------------------------------------------------------------------

DATASETS = "/datasets/v2"


def _datasets(s: Session, a: dict[str, Any]) -> Outcome:
    if "gene_ids" in a:
        return json_outcome(s.call("GET", f"{DATASETS}/gene/id/{','.join(map(str, a['gene_ids']))}", "json"))
    return json_outcome(
        s.call(
            "GET",
            f"{DATASETS}/gene/symbol/{quote(a['symbol'], safe='')}/taxon/{quote(a['taxon'], safe='')}",
            "json",
        )
    )


NCBI_DATASETS = BioTool(
    name="ncbi_datasets",
    service="NCBI Datasets API v2",
    description=(
        "Gene reports from NCBI Datasets v2: by NCBI `gene_ids` (e.g. [7157]) or by `symbol` and "
        "`taxon` (NCBI taxonomy id or name; default 9606, human)."
    ),
    parameters=_obj(
        {
            "gene_ids": {
                "type": "array",
                "minItems": 1,
                "maxItems": 20,
                "items": {"type": "integer", "minimum": 1},
            },
            "symbol": {"type": "string", "pattern": "[A-Za-z0-9_.-]{1,40}"},
            "taxon": {"type": "string", "pattern": "[A-Za-z0-9 _.-]{1,60}", "default": "9606"},
        }
    ),
    endpoints=(
        f"GET {DATASETS}/gene/id/{{gene_ids}}",
        f"GET {DATASETS}/gene/symbol/{{symbols}}/taxon/{{taxon}}",
    ),
    base_url="https://api.ncbi.nlm.nih.gov",
    run=_datasets,
    rate_per_s=5.0,
    rate_with_key_per_s=10.0,
    limiter="ncbi-datasets",
    key_env="NCBI_API_KEY",
    refine=_named("ncbi_datasets", "gene_ids", "symbol"),
    docs="https://www.ncbi.nlm.nih.gov/datasets/docs/v2/api/rest-api/",
    extra={"key_header": "api-key"},
)

HTTP_TOOLS = (
    PUBMED,
    CLINICALTRIALS,
    OPENFDA,
    OPENTARGETS,
    CHEMBL_TOOL,
    UNIPROT,
    PUBCHEM,
    KEGG,
    NCBI_DATASETS,
)

__all__ = ["HTTP_TOOLS"]
