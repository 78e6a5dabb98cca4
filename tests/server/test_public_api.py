"""The server's public surface changes only on purpose, and every setting is documented."""

from __future__ import annotations

import re

import drsearch.contract
import drsearch.server
from drsearch.server import ServerSettings

from ..helpers import REPO

EXPECTED_SERVER_API = {
    "APP_FACTORY", "CONFIG_ENV", "ENDPOINTS", "CorpusReport", "InternalServerError", "MalformedBodyError",
    "MethodNotAllowedError", "MetricsStore", "NoSuchEndpointError", "PayloadTooLargeError", "ServeConfig",
    "ServeError", "ServeProcess", "ServerSettings", "Snapshot", "VerifyLevel", "app_from_config", "app_from_env",
    "create_app", "free_port", "open_verified", "serve", "verify_corpus",
}


def test_server_exports() -> None:
    assert set(drsearch.server.__all__) == EXPECTED_SERVER_API
    for name in drsearch.server.__all__:
        assert getattr(drsearch.server, name) is not None


def test_server_errors_carry_status_and_type() -> None:
    for name in drsearch.server.__all__:
        obj = getattr(drsearch.server, name)
        if isinstance(obj, type) and issubclass(obj, drsearch.contract.DrsearchError):
            assert 400 <= obj.http_status < 600 and obj.error_type and obj.__doc__


def test_every_setting_and_flag_is_documented() -> None:
    doc = (REPO / "docs/SERVER.md").read_text()
    for name in ServerSettings.model_fields:
        assert f"`{name}`" in doc, f"ServerSettings.{name} is not documented in docs/SERVER.md"
    from drsearch.tools.cli import make_parser

    serve = make_parser()._subparsers._group_actions[0].choices["serve"]  # type: ignore[union-attr]
    for action in serve._actions:
        for flag in action.option_strings:
            if flag.startswith("--") and flag != "--help":
                assert re.search(rf"`{flag}\b", doc), f"{flag} is not documented in docs/SERVER.md"


def test_app_factory_import_string_resolves() -> None:
    import importlib

    module, _, attr = drsearch.server.APP_FACTORY.partition(":")
    assert getattr(importlib.import_module(module), attr) is drsearch.server.app_from_env
