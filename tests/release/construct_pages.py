"""Multi-hop fixture pages of the construction tests: written for the tests, about nothing real.

The sample questions name their event, so in the fixture's small corpus one search finds
each one's answer document and the shortcut audit (rightly) removes them all. These six
invented questions need research instead: the question names a first page (the *hop*)
that names a person or ship but not the answer; the answer sits in a second page (the
*answer page*) about that person or ship, written without the question's words, so a
search for the question ranks the hop page and the *distractor* pages (which use the
questions' words and hold no answer) above it. Every name, place and fact here is made
up for the tests; the hosts are ``.example`` hosts served by the loopback crawl server.
"""

from __future__ import annotations

from typing import Any

_PAGE = ("<html><head><title>{title}</title></head><body><article><h1>{title}</h1>{paragraphs}"
         "</article></body></html>")

_FILLER = ("The archive keeps letters, ledgers and photographs from the period, and volunteers answer written "
           "enquiries on weekday mornings. Visitors are asked to book a reading-room seat in advance.")

# (question, answer, hop (url, title, text), answer page (url, title, text), upstream query)
MULTIHOP: list[dict[str, Any]] = [
    {"question": "Which river runs past the home town of the engineer who designed the Quillon Viaduct?",
     "answer": "Sulvenne",
     "hop": ("https://wendmoor-heritage.example/viaducts/quillon", "The Quillon Viaduct",
             "The Quillon Viaduct carries the Wendmoor branch line across the Ashby gorge on eleven brick arches. "
             "It was designed by the engineer Ambrose Tellwright and opened to traffic in 1879. The viaduct was "
             "restored in 1994 and is now a listed structure."),
     "answer_page": ("https://people-of-wendmoor.example/tellwright", "Ambrose Tellwright (1831-1902)",
                     "Ambrose Tellwright grew up in Harrowgate Cross, a mill settlement on the Sulvenne, where his "
                     "father kept a chandlery. Tellwright left school at fourteen to work for a surveyor and later "
                     "set up his own practice. Tellwright is buried in the churchyard of St Ives Cross."),
     "query": "Quillon Viaduct engineer"},
    {"question": "What instrument did the founder of the Morrow Lane Choir play?",
     "answer": "theorbo",
     "hop": ("https://wendmoor-heritage.example/music/morrow-lane-choir", "The Morrow Lane Choir",
             "The Morrow Lane Choir was founded in 1921 by Edith Penhallow in the back room of a bakery. The choir "
             "sang at the coronation concert of 1937 and still rehearses on Thursday evenings."),
     "answer_page": ("https://people-of-wendmoor.example/penhallow", "Edith Penhallow",
                     "Edith Penhallow studied at the conservatoire in Bremen, where she took up the theorbo, and "
                     "Penhallow later taught it to a generation of pupils. Her letters describe long winters "
                     "spent copying lute tablature by candlelight."),
     "query": "Morrow Lane Choir founder"},
    {"question": "In which city was the ship that rescued the crew of the trawler Calloway Star built?",
     "answer": "Port Ennis",
     "hop": ("https://wendmoor-heritage.example/maritime/calloway-star", "The loss of the trawler Calloway Star",
             "The trawler Calloway Star foundered in a gale off Tarn Point in February 1931. Her crew of nine were "
             "rescued by the steamer Halcyon Bay, whose master was later decorated for the rescue."),
     "answer_page": ("https://ships-register.example/halcyon-bay", "SS Halcyon Bay",
                     "The Halcyon Bay was a coastal steamer of 1,200 tons, launched in 1908 from the yards of Port "
                     "Ennis for the Northern Coasting Company. The Halcyon Bay was sold for scrap in 1952."),
     "query": "Calloway Star rescue"},
    {"question": "What was the maiden name of the wife of the mayor who opened the Fenwick Street Library?",
     "answer": "Ostrander",
     "hop": ("https://wendmoor-heritage.example/buildings/fenwick-street-library", "Fenwick Street Library",
             "The Fenwick Street Library was opened in 1936 by the mayor, Tobias Greel, with a gift of four "
             "thousand books from a local mill owner. The library moved to new premises in 1988."),
     "answer_page": ("https://people-of-wendmoor.example/greel", "Tobias Greel",
                     "Tobias Greel married Clara Ostrander in 1911; the couple had three daughters. Greel ran a "
                     "hardware business for thirty years and sat on the hospital board until 1950."),
     "query": "Fenwick Street Library opening"},
    {"question": "Which mountain did the author of the novel The Glass Orchard climb in 1954?",
     "answer": "Carrow Peak",
     "hop": ("https://wendmoor-heritage.example/books/the-glass-orchard", "The Glass Orchard",
             "The Glass Orchard is a novel by Lionel Ashcombe, published in 1949, about a family of fruit growers. "
             "The novel was serialised on the radio in 1951 and has never been out of print."),
     "answer_page": ("https://people-of-wendmoor.example/ashcombe", "Lionel Ashcombe",
                     "Lionel Ashcombe was a keen walker. In the summer after his fortieth birthday Ashcombe reached "
                     "the summit of Carrow Peak with two friends from the rambling club, and wrote about it for "
                     "the parish magazine."),
     "query": "The Glass Orchard author"},
    {"question": "What breed of dog did the keeper of the Tarn Point lighthouse own?",
     "answer": "Lundehund",
     "hop": ("https://wendmoor-heritage.example/maritime/tarn-point-lighthouse", "Tarn Point lighthouse",
             "The lighthouse at Tarn Point was first lit in 1868. It was kept from 1890 to 1921 by Silas "
             "Merriweather, whose log books survive. The light was automated in 1978."),
     "answer_page": ("https://people-of-wendmoor.example/merriweather", "Silas Merriweather",
                     "Silas Merriweather and his Lundehund, Bramble, were a familiar sight on the cliff path. "
                     "Merriweather carved walking sticks in the evenings and sold them to summer visitors."),
     "query": "Tarn Point lighthouse keeper"},
]

DISTRACTORS: list[tuple[str, str, str]] = [
    ("https://wendmoor-heritage.example/trail", "The Wendmoor heritage trail",
     "The heritage trail starts at the viaduct, passes the library and the choir's old bakery, and ends at the "
     "lighthouse. Walkers can climb to the mountain viewpoint, where a board names the river, the town and the "
     "ships built in the harbour. The trail guide, written by a local author, lists who designed, founded, "
     "opened or kept each building."),
    ("https://wendmoor-heritage.example/faq", "Questions visitors ask",
     "Which engineer designed the viaduct? Who founded the choir, and what instrument did its founder play? "
     "Which mayor opened the library, and what was his wife's maiden name? Who kept the lighthouse, and what "
     "breed of dog did the keeper own? Which mountain did the novelist climb? The answers are in the archive's "
     "biographies, not on this page."),
    ("https://wendmoor-heritage.example/rescues", "Rescues at sea",
     "Trawler crews off Tarn Point owe their lives to the lifeboat and to passing ships. The city's harbour "
     "built many of the rescue ships; a trawler crew rescued in a gale is remembered each February."),
]


def _html(title: str, text: str) -> bytes:
    paragraphs = f"<p>{text}</p><p>{_FILLER}</p>"
    return _PAGE.format(title=title, paragraphs=paragraphs).encode()


def pages() -> dict[str, bytes]:
    """url -> HTML of every page above."""
    out = {}
    for q in MULTIHOP:
        for url, title, text in (q["hop"], q["answer_page"]):
            out[url] = _html(title, text)
    for url, title, text in DISTRACTORS:
        out[url] = _html(title, text)
    return out


def upstream_rows() -> list[dict[str, Any]]:
    """The six multi-hop questions as upstream rows: each visited its hop page, its answer page
    and the three distractors."""
    return [{"id": f"hop-{i}", "question": q["question"], "answer": q["answer"],
             "urls": [q["hop"][0], q["answer_page"][0], *(d[0] for d in DISTRACTORS)],
             "queries": [q["query"]], "difficulty": 3, "teacher_correct": False} for i, q in enumerate(MULTIHOP)]


def install(site: Any) -> None:
    """Serve the pages from the loopback crawl server (``tests/corpus/crawlserver.py``)."""
    from ..corpus.crawlserver import Reply, _key

    for url, body in pages().items():
        site.routes[_key(url)] = Reply(body=body)
