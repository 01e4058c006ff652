"""Embeddings for the sandbox RS's meaning-based search, as the reference RS indexes its records.

Contract:

- The model is WordLlama's bundled one, the gateway's own (``embedding_model()`` in
  ``pdpp_gateway.question.meaning``: loaded once per process, offline). ``PROFILE``, ``MODEL``,
  ``DTYPE``, ``DIMENSIONS`` and ``DISTANCE_METRIC`` name it for the RS's discovery document.
- ``FieldVectors.build(entries)`` embeds one text per ``(rowid, field, text)`` entry (the
  caller passes each semantic field's first 2,048 characters, the reference's input rule) and
  answers ``None`` when the model cannot load. A text is embedded once per process: vectors are
  kept by text, so every template database built from the same sample data reuses them.
- ``FieldVectors.distances(query)`` is the cosine distance (``1 - cos``, the reference's
  ``distance_metric=cosine``) of every entry to ``query_vector(query)``, in entry order; a text
  with no token the model knows is at distance 1, and equal texts are at exactly equal
  distances (each distinct text is scored once), as on the reference, where they tie.
  ``query_vector`` keeps the last ``QUERY_CACHE`` questions' vectors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

import numpy as np
import numpy.typing as npt

from pdpp_gateway.question.meaning import embedding_model

PROFILE: Final = "wordllama"
MODEL: Final = "wordllama/l2_supercat"
DTYPE: Final = "float32"
DIMENSIONS: Final = 256
DISTANCE_METRIC: Final = "cosine"
QUERY_CACHE: Final = 256
Matrix = npt.NDArray[np.float32]
_by_text: dict[str, Matrix] = {}


@dataclass(frozen=True, slots=True)
class FieldVectors:
    """Embedded field values: ``rowids[i]``'s ``fields[i]`` has the unit vector ``matrix[rows[i]]``
    (one matrix row per distinct text)."""

    rowids: tuple[int, ...]
    fields: tuple[str, ...]
    rows: npt.NDArray[np.intp]
    matrix: Matrix

    @classmethod
    def build(cls, entries: Sequence[tuple[int, str, str]]) -> FieldVectors | None:
        texts = list(dict.fromkeys(text for _, _, text in entries))
        matrix = _embed(texts)
        if matrix is None:
            return None
        row_of = {text: row for row, text in enumerate(texts)}
        return cls(
            tuple(rowid for rowid, _, _ in entries),
            tuple(field for _, field, _ in entries),
            np.array([row_of[text] for _, _, text in entries], dtype=np.intp),
            matrix,
        )

    def distances(self, query: str) -> npt.NDArray[np.float32]:
        """Each entry's cosine distance to ``query`` (``1 - cos``), in entry order."""
        asked = query_vector(query)
        if asked is None or not self.rowids:
            return np.ones(len(self.rowids), dtype=np.float32)
        return (np.float32(1) - self.matrix @ asked)[self.rows]


@lru_cache(maxsize=QUERY_CACHE)
def query_vector(query: str) -> npt.NDArray[np.float32] | None:
    """The unit vector of one question (``None`` without the model)."""
    vectors = _embed([query], keep=False)
    return None if vectors is None else vectors[0]


def _embed(texts: Sequence[str], *, keep: bool = True) -> Matrix | None:
    """Unit vectors of ``texts`` (rows in their order), each new text embedded once (``keep``:
    remembered for the process). Texts go to the model shortest first, so a batch pads little."""
    model = embedding_model()
    if model is None:
        return None
    known = _by_text if keep else {}
    new = sorted({text for text in texts if text not in known}, key=len)
    if new:
        embedded = np.nan_to_num(model.embed(new, norm=True))  # no known token: a zero vector
        known.update(zip(new, embedded, strict=True))
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    return np.stack([known[text] for text in texts]).astype(np.float32, copy=False)
