"""``question.meaning.closest_sentence`` with the real bundled model: a question finds the sentence
that answers it in other words, ahead of decoys that share its words, and filler finds nothing."""

from __future__ import annotations

import sys

import pytest

from pdpp_gateway.question.meaning import SPAN_CHARS, _model, closest_sentence, sentences

FILLER = (
    "Customer travel up quarterly review release planning conference analysis delivery follow "
    "statement meeting review. Follow follow itinerary booking contract notes agenda."
)
# (question in a person's words, the sentence that answers it, decoys sharing its words)
PARAPHRASES = [
    (
        "where did my landlord stash the extra key",
        "The spare key for the apartment is hidden in the blue flowerpot by the back door.",
        ("Keys for the mailbox are kept by the concierge.", "The apartment handover is on Friday."),
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
    span = closest_sentence(text, question)
    assert span is not None
    assert text[span[0] : span[1]] == answer


def test_a_text_that_says_nothing_of_the_question_has_no_closest_sentence() -> None:
    assert closest_sentence(FILLER * 3, "where did my landlord stash the extra key") is None
    assert closest_sentence("", "anything") is None
    assert closest_sentence("... !!! ???", "anything") is None


def test_sentences_split_at_ends_and_long_runs_at_spaces() -> None:
    run = "word " * 200  # a thousand characters with no sentence end
    text = f"First one. Second one!\nThird one? {run}"
    spans = sentences(text)
    assert [text[a:b] for a, b in spans[:3]] == ["First one.", "Second one!", "Third one?"]
    assert all(0 < b - a <= SPAN_CHARS for a, b in spans)
    assert " ".join(text[a:b] for a, b in spans[3:]).split() == run.split()  # nothing lost


def test_without_the_model_every_answer_is_none_and_it_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setitem(sys.modules, "wordllama", None)  # the import fails, as with a broken install
    _model.cache_clear()
    try:
        text = f"{FILLER} {PARAPHRASES[0][1]}"
        assert closest_sentence(text, PARAPHRASES[0][0]) is None
        assert closest_sentence(text, PARAPHRASES[0][0]) is None
    finally:
        _model.cache_clear()
    warnings = [r for r in caplog.records if "passages by meaning are off" in r.getMessage()]
    assert len(warnings) == 1


def test_a_figure_question_finds_the_sentence_with_the_number_even_when_it_shares_little() -> None:
    answer = "The mechanic replaced the front brake pads; the repair cost 340 EUR in total."
    text = f"{FILLER} Bring the car back and we will check it free of charge. {FILLER} {answer} {FILLER}"
    question = "how much did the garage charge me for the car"
    plain = closest_sentence(text, question)
    assert plain is not None
    assert "free of charge" in text[plain[0] : plain[1]]  # by meaning alone, the words win
    span = closest_sentence(text, question, figure=True)
    assert span is not None
    assert text[span[0] : span[1]] == answer
