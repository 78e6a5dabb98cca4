"""The DR-256 construction recipe run offline on the fixture of ``data/construct/``
(``make sample-release``; docs/CONSTRUCT.md).

- ``driver``: the recipe, stage by stage, through the ``drsearch`` CLI;
- ``fixture``: the fixture's upstream pool, multi-hop pages and blocklist, read from data/;
- ``crawl_site``: the loopback crawl site (a real HTTP server on 127.0.0.1) that the
  fixture's URLs are fetched from;

The offline stand-in for the reference agent's model (the real recipe runs a real model) and
the oracle judge (correct iff the answer is the label) are :mod:`drsearch.dev.chat` and
:mod:`drsearch.dev.judge` (``drsearch dev model`` serves them as a command).

A real ``drsearch serve`` for a ``with`` block is the server layer's
:class:`drsearch.server.ServeProcess`.

The test suite uses these same modules (tests/__init__.py puts ``scripts/`` on sys.path).
"""
