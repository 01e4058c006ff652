"""A question as a person asked it, parsed once: what every retrieval step reads of it.

Contract: ``Question.parse(text)`` reads the text once (``words``) and answers a frozen record
of what the steps of a search ask of a question: its content words, the words matched when it
has none (``terms``: the whole question), whether it asks for a figure or for who sent
something and when, and its most distinctive words for a relaxed search or an aimed read
(``distinctive``; ``relaxed``: the query of a search relaxed from it, when it has more than
``RELAXED_WORDS`` content words). No step parses the question again.
"""

from __future__ import annotations

from dataclasses import dataclass

from pdpp_gateway.question.words import (
    RELAXED_WORDS,
    asks_for_figure,
    asks_who_or_when,
    content_words,
    most_distinctive,
)


@dataclass(frozen=True, slots=True)
class Question:
    text: str  # as asked
    words: tuple[str, ...]  # its content words, in order, each once
    figure: bool  # it asks for a number, an amount, a time or a code
    who_or_when: bool  # it asks who sent or made something, or when it came

    @classmethod
    def parse(cls, text: str) -> Question:
        return cls(
            text=text,
            words=tuple(content_words(text)),
            figure=asks_for_figure(text),
            who_or_when=asks_who_or_when(text),
        )

    @property
    def terms(self) -> tuple[str, ...]:
        """The words a text is matched against: the content words, else the question whole."""
        return self.words or (self.text,)

    def distinctive(self, count: int = RELAXED_WORDS) -> tuple[str, ...]:
        """Its ``count`` most distinctive content words, in the question's order."""
        return tuple(most_distinctive(self.words, count))

    def relaxed(self) -> str | None:
        """The query of a search relaxed from it: its most distinctive words, when it has more
        than ``RELAXED_WORDS`` content words (fewer are the words themselves); else ``None``."""
        return " ".join(self.distinctive()) if len(self.words) > RELAXED_WORDS else None
