"""The sentence of a long text that means what a question asks, when its words differ.

Contract (text in, a span out; no I/O but loading the model, once per process):

- ``closest_sentence(text, question)`` splits ``text`` into sentences (at ``.``, ``!``, ``?``
  and line breaks; a longer run is cut into ``SPAN_CHARS`` pieces at spaces) and answers the
  span ``(start, end)`` of the one whose meaning is nearest the question's (cosine similarity
  of their embeddings), or ``None`` when the text has no sentence or none comes within
  ``MIN_SIMILARITY``; with ``figure`` (the question asks for a number, an amount, a time or a
  code) only the sentences holding a digit compete, when there are any, within
  ``MIN_FIGURE_SIMILARITY``. "where did the landlord stash the extra key" finds "The spare
  key for the apartment is hidden in the blue flowerpot", which shares one word with it and
  loses, on words alone, to "Keys for the mailbox are kept by the concierge".
- The embeddings are WordLlama's bundled model: static token embeddings averaged, 256
  dimensions, 16 MB, shipped inside its wheel (loaded from there, downloads forbidden: no
  network, no GPU; about 200 ms to load, a few ms for a 32k-character text). It loads on
  first use, under a lock, and stays for the process; ``embedding_model()`` hands the same
  model to the sandbox RS's meaning-based search. CPU-bound: call it from a thread in a
  server (``asyncio.to_thread``).
- A model that cannot load (a wheel without its weights) is logged once and every answer is
  ``None``: a search then shows the passages found by words alone.
"""

from __future__ import annotations

import logging
import re
import threading
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Final

if TYPE_CHECKING:
    from wordllama.inference import WordLlamaInference

SPAN_CHARS: Final = 240
MIN_SIMILARITY: Final = 0.2  # below it a sentence shares no more with the question than filler does
# among the sentences holding a number only, for a question that asks for one: fewer compete,
# and the number is itself half the evidence ("how much did the garage charge me" meets "the
# repair cost 340 EUR" at 0.15)
MIN_FIGURE_SIMILARITY: Final = 0.1
_SENTENCE: Final = re.compile(r"[^.!?\n]+[.!?]*")
_LOCK: Final = threading.Lock()
_LOG: Final = logging.getLogger(__name__)


def closest_sentence(text: str, question: str, *, figure: bool = False) -> tuple[int, int] | None:
    """The span of ``text``'s sentence nearest ``question`` in meaning (see the contract)."""
    spans = sentences(text)
    least = MIN_SIMILARITY
    numbered = [span for span in spans if any(c.isdigit() for c in text[span[0] : span[1]])] if figure else []
    if numbered:  # the question asks for a number: the sentences holding one
        spans, least = numbered, MIN_FIGURE_SIMILARITY
    if not spans:
        return None
    model = embedding_model()
    if model is None:
        return None
    asked = model.embed([question], norm=True)[0]
    scores = model.embed([text[start:end] for start, end in spans], norm=True) @ asked
    best = int(scores.argmax())
    return spans[best] if float(scores[best]) >= least else None


def sentences(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s sentences, none over ``SPAN_CHARS``, each holding a letter or digit."""
    spans: list[tuple[int, int]] = []
    for match in _SENTENCE.finditer(text):
        start, end = match.start(), match.end()
        while start < end and text[start].isspace():
            start += 1
        while end - start > SPAN_CHARS:
            cut = text.rfind(" ", start, start + SPAN_CHARS)
            cut = cut if cut > start else start + SPAN_CHARS
            spans.append((start, cut))
            start = cut + 1
        if any(character.isalnum() for character in text[start:end]):
            spans.append((start, end))
    return spans


def embedding_model() -> WordLlamaInference | None:
    """WordLlama's bundled model, loaded once per process (under a lock), or ``None`` when it
    cannot load (logged once). Its ``embed(texts, norm=True)`` gives unit vectors: their dot
    product is the cosine similarity."""
    with _LOCK:
        return _model()


@cache
def _model() -> WordLlamaInference | None:
    try:
        import wordllama
        from wordllama import WordLlama

        # the model ships in the wheel: point the loader at it and forbid downloads
        return WordLlama.load(cache_dir=Path(wordllama.__file__).parent, disable_download=True)
    except (ImportError, OSError, ValueError) as error:
        _LOG.warning("passages by meaning are off, the model did not load: %s", error)
        return None
