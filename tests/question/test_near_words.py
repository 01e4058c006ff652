"""``question.near_words``: a sentence holds a question word through a word near it in meaning
("fee" for "cost"), counted at that nearness, and the answer window follows it.

The texts here are written for these tests (a swimming club's letter); none is sandbox data or a
benchmark question."""

from __future__ import annotations

import math

import pytest

from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.meaning import embedding_model
from pdpp_gateway.question.near_words import NEAR, near_forms, near_held, nearness
from pdpp_gateway.question.sentences import answer_windows, rarity

LETTER = (
    "Dear parents, the swimming lessons for the kids start again after the holidays. "
    "Lessons are on Tuesdays and Thursdays at the municipal pool, from 17:30 to 18:15. "
    "Please bring a towel, a cap and flip-flops, and label everything with your child's name. "
    "The fee for the term is 96 EUR per child, payable by bank transfer before the first lesson. "
    "Parents may watch from the gallery, but not from the poolside. "
    "The pool closes for cleaning on the last Friday of every month. "
)
QUESTION = Question.parse("how much do the kids' swimming lessons cost")


@pytest.fixture(scope="module")
def model() -> object:
    loaded = embedding_model()
    if loaded is None:
        pytest.skip("WordLlama's bundled model did not load")
    return loaded


def test_a_word_near_in_meaning_holds_the_question_word_at_its_nearness(model: object) -> None:
    pieces = [
        "The fee is 96 EUR.",  # "fee" for "cost"
        "The cost is 96 EUR.",  # the word itself: held as such, not again here
        "Bring a towel and a cap.",  # nothing near
        "Every child pays the fee.",  # "child" for "kids" as well
    ]
    weights = rarity(QUESTION, [[piece] for piece in pieces])
    exact = [{"cost"} if "cost" in piece else set() for piece in pieces]
    held = near_held(nearness(model, QUESTION, pieces), pieces, weights, exact)
    assert NEAR * weights["cost"] <= held[0] < weights["cost"]
    assert held[1] == 0
    assert held[2] == 0
    assert held[3] > held[0]


def test_the_answer_window_is_the_sentence_that_says_it_in_other_words(model: object) -> None:
    # the opening repeats "kids swimming lessons"; the answer says "fee" where the question
    # says "cost": without the near word, the opening's window was shown and the fee was not
    (best,) = answer_windows(QUESTION, LETTER, count=1)
    assert LETTER[best.sentence[0] : best.sentence[1]].startswith("The fee for the term is 96 EUR")


def test_a_question_word_said_near_in_many_places_weighs_as_little_as_one_said_in_many(model: object) -> None:
    # "cost" is said once, but the fee and the price say it again: four documents hold it,
    # so it is a common word of this collection, not the rarest one
    documents = [
        ["The cost is 96 EUR."],
        ["The fee is paid by transfer."],
        ["Ask for the price at the desk."],
        ["The fee covers the cap."],
        ["Lessons start on Tuesday."],
        ["The pool is closed on Friday."],
    ]
    forms = near_forms(nearness(model, QUESTION, [text for texts in documents for text in texts]))
    assert {"cost", "fee", "price"} <= forms["cost"]
    assert "pool" not in forms["cost"]
    weights = rarity(QUESTION, documents)
    held_by = 4  # of 6 documents
    assert weights["cost"] == pytest.approx(math.log(1 + (6 - held_by + 0.5) / (held_by + 0.5)))
    assert weights["cost"] < max(weights.values())  # "swimming" is said nowhere here: the rarest
