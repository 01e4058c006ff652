"""Sentences, and the embedding model that says how near one is in meaning to a question.

Contract (text in, spans and vectors out; no I/O but loading the model, once per process):

- ``sentences(text)``: the spans of ``text``'s sentences: each ends at ``.``, ``!``, ``?`` or
  a line break (a list item or a table row stands alone); a longer run is cut into
  ``SPAN_CHARS`` pieces at spaces. A period inside a number or a name ("1.284,17 €",
  "v2.31.4") ends one too: the windows built on a sentence run on past it, and the splits that
  keep such numbers whole (Wikimedia's sentencex, or no end inside a word) answered fewer
  questions on the dev split.
- ``embedding_model()``: WordLlama's bundled model: static token embeddings averaged, 256
  dimensions, 16 MB, shipped inside its wheel (loaded from there, downloads forbidden: no
  network, no GPU; about 200 ms to load, a few ms for a 32k-character text). It loads on
  first use, under a lock, and stays for the process; the same model scores sentences
  (``sentences.score_sentences``) and serves the sandbox RS's meaning-based search.
  CPU-bound: call it from a thread in a server (``asyncio.to_thread``).
- A model that cannot load (a wheel without its weights) is logged once and answers
  ``None``: passages are then found by words alone.
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
_SENTENCE: Final = re.compile(r"[^.!?\n]+[.!?]*")
_LOCK: Final = threading.Lock()
_LOG: Final = logging.getLogger(__name__)


def sentences(text: str) -> list[tuple[int, int]]:
    """The spans of ``text``'s sentences, none over ``SPAN_CHARS``, each holding a letter or digit."""
    spans: list[tuple[int, int]] = []
    for match in _SENTENCE.finditer(text):
        _add_sentence(text, match.start(), match.end(), spans)
    return spans


def _add_sentence(text: str, start: int, end: int, spans: list[tuple[int, int]]) -> None:
    """The sentence ``text[start:end]`` added to ``spans``: trimmed, in ``SPAN_CHARS`` pieces."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    while end - start > SPAN_CHARS:
        cut = text.rfind(" ", start, start + SPAN_CHARS)
        cut = cut if cut > start else start + SPAN_CHARS
        spans.append((start, cut))
        start = cut + 1
    if any(character.isalnum() for character in text[start:end]):
        spans.append((start, end))


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
