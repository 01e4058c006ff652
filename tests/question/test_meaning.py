"""``question.meaning`` and the scorer above it, with the real bundled model: sentences split where
a reader would split them, and a question finds the sentence that answers it in other words,
ahead of decoys that share its words."""

from __future__ import annotations

import sys

import pytest

from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.meaning import SPAN_CHARS, _model, embedding_model, sentences
from pdpp_gateway.question.sentences import answer_windows

FILLER = (
    "Customer travel up quarterly review release planning conference analysis delivery follow "
    "statement meeting review. Follow follow itinerary booking contract notes agenda."
)
# (question in a person's words, the sentence that answers it, decoys sharing its words)
PARAPHRASES = [
    pytest.param(
        "where did my landlord stash the extra key",
        "The spare key for the apartment is hidden in the blue flowerpot by the back door.",
        ("Keys for the mailbox are kept by the concierge.", "The apartment handover is on Friday."),
        # a known weakness, kept in sight: "where" asks for a name, and the kind bonus goes to
        # any capitalised word ("Friday"), outweighing WordLlama's meaning (0.28 against 0.11)
        marks=pytest.mark.xfail(strict=True, reason="the kind bonus outweighs meaning for 'where'"),
    ),
    (
        "how much is my fitness club going to take from my account every month",
        "Your gym membership renews on 1 June at 39 EUR a month.",
        ("Membership cards can be replaced at reception.", "The gym is closed on public holidays."),
    ),
    (
        "how much did I pay to get the car fixed",
        "The mechanic replaced the front brake pads; the repair cost 340 EUR in total.",
        ("Brake fluid is checked at every second service.", "The mechanic recommends new tyres next year."),
    ),
    (
        "roughly how much have I got saved up for retirement",
        "Your pension pot was worth 48,200 EUR on 31 December.",
        ("Pension contributions rise in April.", "This statement covers the last tax year."),
    ),
]


@pytest.mark.parametrize(("question", "answer", "decoys"), PARAPHRASES)
def test_the_answer_in_other_words_beats_decoys_that_share_the_question_s_words(
    question: str, answer: str, decoys: tuple[str, str]
) -> None:
    text = f"{FILLER}\n\n{decoys[0]} {FILLER}\n{decoys[1]}\n\n{FILLER} {answer} {FILLER}"
    best = answer_windows(Question.parse(question), text, 1)[0]
    assert text[best.sentence[0] : best.sentence[1]] == answer


def test_sentences_split_at_ends_and_long_runs_at_spaces() -> None:
    run = "word " * 200  # a thousand characters with no sentence end
    text = f"First one. Second one!\nThird one? {run}"
    spans = sentences(text)
    assert [text[a:b] for a, b in spans[:3]] == ["First one.", "Second one!", "Third one?"]
    assert all(0 < b - a <= SPAN_CHARS for a, b in spans)
    assert " ".join(text[a:b] for a, b in spans[3:]).split() == run.split()  # nothing lost


def test_every_line_of_a_list_or_a_table_stands_alone() -> None:
    text = "Policy number: AT-118734\nTotal premium paid: 87,40 EUR (taxes)\n| PN-0412 | PN Sul | 47m12s |"
    assert [text[a:b] for a, b in sentences(text)] == text.split("\n")


def test_without_the_model_there_is_none_and_it_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # the import fails, as with a broken install
    _model.cache_clear()
    try:
        assert embedding_model() is None
        assert embedding_model() is None
        text = f"{FILLER} The spare key is hidden in the blue flowerpot."
        assert answer_windows(Question.parse("where is the spare key"), text, 1)  # words alone
    finally:
        _model.cache_clear()
    warnings = [r for r in caplog.records if "passages by meaning are off" in r.getMessage()]
    assert len(warnings) == 1


def test_a_figure_question_prefers_the_sentence_with_the_number_among_those_that_share_its_words() -> None:
    answer = "The repair of the car cost 340 EUR in the end."
    text = f"{FILLER} The repair of the car is booked at the garage next week. {FILLER} {answer} {FILLER}"
    best = answer_windows(Question.parse("how much was the repair of the car"), text, 1)[0]
    assert text[best.sentence[0] : best.sentence[1]] == answer
