"""``question.sentences.answer_windows`` and ``question.answer_type``: the window shown of a long text
holds the sentence chosen for it whole, with what follows it, and a sentence holding the kind of
value a question asks for outranks one that only repeats the question's words.

The texts here are written for these tests (a lease, an appointment letter); none is sandbox data
or a benchmark question."""

from __future__ import annotations

from itertools import combinations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pdpp_gateway.question.answer_type import asked_kinds, held_kinds
from pdpp_gateway.question.asked import Question
from pdpp_gateway.question.meaning import sentences
from pdpp_gateway.question.sentences import MAX_CHARS, answer_windows
from pdpp_gateway.retrieval.passage_reads import PREVIEW_CHARS, ScannedField, windows_evidence

LETTER = (
    "Dear Ms Okafor,\n\nThank you for calling the clinic this morning. "
    "Following our phone call, we confirm the appointment for your son:\n"
    "Date: Thursday 9 October at 11:20\n"
    "Place: Rua Nova 12, second floor, room 4.\n\n"
    "Please bring his vaccination booklet and arrive ten minutes early. "
    "If you need to change the appointment, call us at least two days before.\n\n"
    + "Our clinic is open on weekdays and the reception team is happy to help with any question. "
    * 20
)


@pytest.mark.parametrize(
    ("question", "kinds"),
    [
        ("how much was the plumber in the end", {"money", "number"}),
        ("what time does the shop open on sundays", {"time"}),
        ("until when can we hand in the form", {"date", "time"}),
        ("how many people came to the meetup", {"number"}),
        ("which version fixed the login bug", {"code", "number", "name"}),
        ("why was the meeting moved", set()),
    ],
)
def test_a_question_asks_for_the_kind_of_value_its_wording_names(question: str, kinds: set[str]) -> None:
    assert asked_kinds(question) == kinds


def test_a_sentence_holds_the_values_it_shows() -> None:
    assert {"money", "number"} <= held_kinds("The total came to 412,50 EUR with parts.")
    assert {"time", "date"} <= held_kinds("See you on Friday 3 May at 09:45.")
    assert "code" in held_kinds("Set `pool_size` higher, or upgrade to v4.2.1.")
    assert held_kinds("nothing to see here") == frozenset()


def test_the_answer_line_after_its_introduction_is_in_the_first_window() -> None:
    question = Question.parse("when is my son's appointment at the clinic")
    text = LETTER
    windows = answer_windows(question, text, count=2)
    assert windows
    assert "Thursday 9 October at 11:20" in text[windows[0].start : windows[0].end]
    shown = windows[0].preview(text, PREVIEW_CHARS)
    assert "<mark>appointment</mark>" in shown
    assert "Thursday 9 October at 11:20" in shown  # what a page shows of it, not only the window
    assert shown.endswith("…")  # the letter goes on


def test_a_word_typed_without_its_accents_is_the_word_with_them() -> None:
    # people type "megane" and "sao miguel"; the text says "Mégane" and "São Miguel"
    text = (
        "The van went back to the garage in March for its brakes, all fine since then. "
        "The garage looked at the Mégane on Tuesday: its clutch slave cylinder is leaking. "
        "We will also be in São Miguel in August, so any repair must wait until September."
    )
    (window,) = answer_windows(Question.parse("what is wrong with the megane at the garage"), text, count=1)
    assert "slave cylinder is leaking" in text[window.sentence[0] : window.sentence[1]]
    assert "<mark>Mégane</mark>" in window.preview(text, PREVIEW_CHARS)
    assert (window.matched, window.asked) == (2, 3)  # "megane" and "garage" of wrong, megane, garage
    (island,) = answer_windows(Question.parse("when are we in sao miguel"), text, count=1)
    assert "<mark>São</mark> <mark>Miguel</mark>" in island.preview(text, PREVIEW_CHARS)


def test_windows_never_overlap_and_come_best_first() -> None:
    windows = answer_windows(Question.parse("where do we go for the appointment"), LETTER, count=3)
    assert [w.score for w in windows] == sorted((w.score for w in windows), reverse=True)
    for first, second in combinations(windows, 2):
        assert first.end <= second.start or second.end <= first.start


@settings(max_examples=60, deadline=None)
@given(
    st.lists(
        st.text(alphabet="abcdefghij klmno.,:;\n0123456789€", min_size=1, max_size=300),
        min_size=1,
        max_size=8,
    ),
    st.sampled_from(["how much is it", "when does it start", "what did they decide"]),
)
def test_a_window_never_ends_inside_the_sentence_it_was_chosen_for(parts: list[str], asked: str) -> None:
    text = ". ".join(parts)
    windows = answer_windows(Question.parse(asked), text, count=2)
    for place, window in enumerate(windows):
        first, last = window.sentence  # its sentence, or two when it grew to hold a better one's
        spans = sentences(text)
        assert first in {start for start, _ in spans}
        assert last in {end for _, end in spans}
        assert window.start <= first
        assert window.end >= last or last - first > MAX_CHARS
        # what a page shows of it, however short its bound, runs on to the sentence's end
        shown = window.preview(text, 20).removesuffix("…").replace("<mark>", "").replace("</mark>", "")
        assert " ".join(text[first:last].split()) in shown or last - first > MAX_CHARS
        # and opens with the sentence before it, whole, unless a better window ends inside it
        at = [start for start, _ in spans].index(first)
        better = windows[:place]
        if at and last - first <= MAX_CHARS and not any(before < first for before in (w.end for w in better)):
            before_first, before_last = spans[at - 1]
            assert window.start <= before_first
            assert " ".join(text[before_first:before_last].split()) in shown


def test_a_window_shows_the_sentence_its_answer_leans_on() -> None:
    # the sentence that best meets the question says what was lost; why is the sentence before
    text = (
        "We compared three places to keep the payment keys. "
        "The shared cache is set to evict the oldest entries when its memory is full, "
        "and it dropped entries twice last year under load. "
        "A lost payment key means a rider is charged twice. "
        "The database keeps them for as long as we ask, in the same transaction as the charge."
    )
    window = answer_windows(Question.parse("why is a lost payment key a problem"), text, count=1)[0]
    assert text[window.sentence[0] : window.sentence[1]].startswith("A lost payment key")
    shown = window.preview(text, PREVIEW_CHARS).replace("<mark>", "").replace("</mark>", "")
    assert "evict the oldest entries when its memory is full" in shown


REPORT = (
    "Broke on main after the parser refactor (#812); it failed 7 of the last 50 nightly builds. "
    "A retry passes, so people retry, but it holds up releases now and then.\n\n"
    "```\n=== RUN   TestInvoiceRounding_LeapDay\n"
    "invoice_test.go:88: leap day rounding: got 3 lines, want 2\n"
    "--- FAIL: TestInvoiceRounding_LeapDay (0.01s)\nFAIL\n"
    "FAIL\tgithub.com/example/ledger/internal/invoice\t0.291s\n```\n"
    "I will look at it tomorrow."
)


def test_the_second_best_sentence_is_shown_though_it_stands_near_the_best() -> None:
    # the log line naming the test meets the question best; the figure is two lines above it,
    # within the room the log's window would take: it gets the room left, not dropped
    question = Question.parse("how often was TestInvoiceRounding_LeapDay failing in the nightly builds")
    best, second = answer_windows(question, REPORT, count=2)
    assert "--- FAIL: TestInvoiceRounding_LeapDay" in REPORT[best.sentence[0] : best.sentence[1]]
    assert second.end <= best.start  # no two overlap
    shown = second.preview(REPORT, PREVIEW_CHARS).replace("<mark>", "").replace("</mark>", "")
    assert "it failed 7 of the last 50 nightly builds." in shown


LEASE = (
    "Clause 7 of the lease covers the repairs the owner takes on. "
    * 6
    + "\n\nThe owner accepts that the old timber skylight over the bathroom is rotten at the frame, lets "
    "rain run down the wall whenever the wind blows from the west, and has stained the ceiling paint "
    "twice since the tenants moved in, as both parties saw on their visit of 2 February. "
    "The owner will replace the said skylight with a new sealed skylight with a laminated pane, at "
    "the owner's own cost, with the work to be finished no later than 15 March 2027. "
    "The tenants shall give access to the builders on weekdays between 9:00 and 17:00. "
    + "Nothing in this clause changes the rent agreed in clause 3. "
    * 8
)


def test_a_window_that_reaches_into_the_next_best_sentence_holds_it_whole() -> None:
    # the sentence that meets the question best describes the leak; the date is in the next one,
    # which the best window's width reaches into: the window runs on to that sentence's end,
    # rather than stopping inside it and leaving the date to a second window nobody is shown
    question = Question.parse(
        "when will the owner fix the rotten skylight that lets rain down the bathroom wall"
    )
    best = answer_windows(question, LEASE, count=2)[0]
    assert LEASE[best.sentence[0] :].startswith("The owner accepts that the old timber skylight")
    assert LEASE[: best.sentence[1]].endswith("no later than 15 March 2027.")
    shown = best.preview(LEASE, PREVIEW_CHARS).replace("<mark>", "").replace("</mark>", "")
    assert "the work to be finished no later than 15 March 2027." in shown
    assert best.end - best.start <= MAX_CHARS


CONFIRMATION = (
    "Dear Ms Okafor,\n\nFollowing your call this morning, we confirm your son's appointment:\n"
    "Patient: Daniel Okafor Mensah\n"
    "Service: Paediatric Dermatology, first consultation with patch tests\n"
    "Doctor: Dr. Helena Vasconcelos Pinto\n"
    "Date: Monday 17 November at 09:10\n"
    "Place: Centro Clínico do Areeiro, Avenida de Roma 112, third floor, room 12\n"
    "Please bring his health card and the list of creams he uses. "
    "Patch tests need three visits in one week; we will book the other two on the day.\n\n"
    + "Our reception is open on weekdays and is glad to help with any question. "
    * 10
)


def test_a_page_shows_the_window_as_wide_as_it_was_chosen() -> None:
    # the line that introduces the details meets the question; the room is five lines on, within
    # the window's width: what the page shows of it holds the room, not only a read around it
    question = Question.parse("which room is my son's appointment in")
    window = answer_windows(question, CONFIRMATION, count=1)[0]
    assert "we confirm your son's appointment" in CONFIRMATION[window.sentence[0] : window.sentence[1]]
    shown = window.preview(CONFIRMATION, PREVIEW_CHARS).replace("<mark>", "").replace("</mark>", "")
    assert "third floor, room 12" in shown


def test_a_text_that_fits_one_window_is_shown_whole_with_no_read_offered() -> None:
    # the report's two best sentences have a window each; together they are the whole report,
    # which fits one window: a page shows it once, whole, and offers no read of what it shows
    question = Question.parse("how often was TestInvoiceRounding_LeapDay failing in the nightly builds")
    windows = answer_windows(question, REPORT, count=2)
    assert len(windows) == 2
    assert len(REPORT) <= MAX_CHARS
    scanned = ScannedField(REPORT, len(REPORT), "cin_a")
    (whole,) = windows_evidence(scanned, windows, question, {"id": "cin_a/issues:I1"}, "body")
    shown = whole["preview"].replace("<mark>", "").replace("</mark>", "")
    assert shown == " ".join(REPORT.split())  # the whole text, on one line, no … at either end
    assert "read" not in whole
    assert "<mark>TestInvoiceRounding_LeapDay</mark>" in whole["preview"]
    # a text longer than a window keeps its windows, each with the read that opens around it
    long = LETTER
    scanned = ScannedField(long, len(long), "cin_a")
    evidence = windows_evidence(
        scanned, answer_windows(question, long, count=2), question, {"id": "x"}, "body"
    )
    assert evidence
    assert all("read" in item for item in evidence)
