"""Question words a sentence holds in other words: "paid" for "pay", "fee" for "cost".

Contract (plain text in, numbers out; no I/O but the embedding model ``meaning`` loads once;
CPU-bound, call it from a thread in a server):

- ``nearness(model, question, texts)``: for each question word (once), its stem and the words
  of ``texts`` near it in meaning, each with that nearness: the cosine of the two words' vectors
  in the embedding model (WordLlama's static token embeddings, averaged over a word's tokens),
  when it is at least ``NEAR`` (the word itself and its forms among them). Measured once over
  the texts a ranking reads, it serves both uses below.
- ``near_held(near, pieces, weights, exact)``: for each sentence in ``pieces`` (its words among
  the texts ``near`` was measured over), the weight (``weights``: each question word's stem and
  its rarity, as ``sentences.rarity`` gives them) of the question words it does not hold as
  such (``exact``: the stems each sentence holds, ``passages.word_hits``: the same word in
  another form) but holds through a near word, each counted at that nearness. A word of the
  sentence may stand for several question words, and the nearest one counts.
- ``near_forms(near)``: for each question word's stem, the words near it: what a sentence must
  hold to hold that question word, in its own words or in near ones. ``sentences.rarity``
  counts a question word's documents by them, so a word held near in many places weighs as
  little as one said in many places.
- Words are runs of at least three letters, compared lower-cased. A question matched whole
  (no content words) holds none this way.
- Each word's vector is computed once per process and kept, at most ``KEPT_WORDS`` of them
  (the store starts over when full).

The stemmer meets a word's regular forms ("payable" for "pay"); a person's question and the
sentence that answers it often differ by more: an irregular form ("paid"), a synonym ("fee",
"kids" for "children"), a word of the same family the suffix rules miss ("illness" for "ill").
Static vectors also bring a word near one that shares its first token ("land" for "landlord"):
the nearness weighs the credit, and the sentence's meaning and its words as such still count.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Final

from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.words import stem

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    from wordllama.inference import WordLlamaInference

NEAR: Final = 0.5  # the least cosine at which a word stands for a question word
KEPT_WORDS: Final = 20_000
LETTERS: Final = re.compile(r"[^\W\d_]{3,}")
_VECTORS: dict[str, npt.NDArray[np.float32]] = {}
_LOCK: Final = threading.Lock()


Nearness = list[tuple[str, dict[str, float]]]  # each question word's stem, the words near it


def nearness(model: WordLlamaInference, question: Question, texts: Iterable[str]) -> Nearness:
    """For each question word (lower-cased, once), its stem and the words of ``texts`` at least
    ``NEAR`` to it, each with that nearness (see the module contract)."""
    import numpy as np

    asked = {word.lower(): stem(word) for word in question.words}
    vocabulary = sorted({word.lower() for text in texts for word in LETTERS.findall(text)})
    if not asked or not vocabulary:
        return []
    measured = _vectors(model, vocabulary) @ _vectors(model, list(asked)).T
    return [
        (
            key,
            {
                vocabulary[row]: float(measured[row, column])
                for row in np.nonzero(measured[:, column] >= NEAR)[0]
            },
        )
        for column, key in enumerate(asked.values())
    ]


def near_held(
    near: Nearness, pieces: Sequence[str], weights: dict[str, float], exact: Sequence[set[str]]
) -> npt.NDArray[np.float64]:
    """Each sentence's weight of question words held through a near word (see the module contract)."""
    import numpy as np

    held = np.zeros(len(pieces))
    asked = [(key, words) for key, words in near if key in weights]
    for index, (piece, said) in enumerate(zip(pieces, exact, strict=True)):
        own = {word.lower() for word in LETTERS.findall(piece)}
        held[index] = sum(
            weights[key] * max(words[word] for word in own & words.keys())
            for key, words in asked
            if key not in said and not own.isdisjoint(words)
        )
    return held


def near_forms(near: Nearness) -> dict[str, set[str]]:
    """Each question word's stem and the words near it (see the module contract)."""
    forms: dict[str, set[str]] = {}
    for key, words in near:
        forms.setdefault(key, set()).update(words)
    return forms


def _vectors(model: WordLlamaInference, words: Sequence[str]) -> npt.NDArray[np.float32]:
    """The unit vectors of ``words``, in order, each computed once per process."""
    import numpy as np

    with _LOCK:
        missing = [word for word in words if word not in _VECTORS]
        if missing:
            if len(_VECTORS) + len(missing) > KEPT_WORDS:
                _VECTORS.clear()
            _VECTORS.update(zip(missing, model.embed(missing, norm=True), strict=True))
        return np.array([_VECTORS[word] for word in words])
