"""The contract floor: the shared language every layer of drsearch speaks.

Nothing here ranks, stores or serves; it is what rankers, stores and front-ends agree on,
and it imports only the standard library (import-linter keeps it so):

    errors      the one exception tree (HTTP status and CLI exit code on each class)
    request     the request contract: limits, parse_search / parse_open / parse_retrieve,
                canonical JSON, error bodies, the search/open tool schemas
    models      the result values: Hit, Document, SearchResult (their to_dict() are the
                HTTP bodies)
    retriever   the Retriever protocol every front-end is typed against (the engine
                implements it; a second ranker would too)
    searcher    the Searcher protocol agents' tools call (in-process, HTTP, replay)
    atomic      atomic file writes; jsonfile  reading a JSON object file, one-line errors
    dirlock     one writer per output directory (a lock the OS drops when its process dies)
    retry       outbound calls retried one way: RetryPolicy, parse_retry_after, retry()
                (imported as ``drsearch.contract.retry``, outside the union below: its
                RetryPolicy is not the agents' settings model of that name)
    listen      tcp_listener: a listening socket on which asyncio turns Nagle off (imported
                as ``drsearch.contract.listen``: only servers that bind their own need it)

docs/DESIGN.md ("Layers") draws where this floor sits and where a new ranker or front-end goes.
"""

# Each module's __all__ is its public surface, and this package's is their union: the names
# are listed once, in the module that defines them (hence the star imports).
from . import atomic, dirlock, errors, jsonfile, models, request, retriever, searcher
from .atomic import *  # noqa: F403
from .dirlock import *  # noqa: F403
from .errors import *  # noqa: F403
from .jsonfile import *  # noqa: F403
from .models import *  # noqa: F403
from .request import *  # noqa: F403
from .retriever import *  # noqa: F403
from .searcher import *  # noqa: F403

__all__: list[str] = []
__all__ += atomic.__all__
__all__ += dirlock.__all__
__all__ += errors.__all__
__all__ += jsonfile.__all__
__all__ += models.__all__
__all__ += request.__all__
__all__ += retriever.__all__
__all__ += searcher.__all__
