"""Questions in a person's words reach their fact (``retrieval.search``), pinned at the level
of the RS reads made and the answer text a model reads: the question's content words first; after
an empty page, meaning-based and fewer-word hits fused; the passage of a long field found by the
gateway where the RS shows only the field's opening. A pinned mode is exactly that mode.
"""

from __future__ import annotations

import contextlib
import json
from typing import Any
from urllib.parse import parse_qs

import pytest
from mcp_gateway_middleware import ToolCall

from pdpp_gateway.context import GatewayContext
from pdpp_gateway.question.words import content_words
from pdpp_gateway.render.common import FEWER_WORDS_AND_MEANING, WORDS_AND_MEANING
from pdpp_gateway.retrieval.stream_hints import stream_hints
from pdpp_gateway.rs.client import RsClient
from pdpp_gateway.tools.pipeline import build_pipeline
from tests.package.helpers import mail_and_chat
from tests.tools.calls import without_words_apart
from tests.upstreams import upstream_proxy

QUESTION = "when does my flight to Porto leave booking"  # no record holds every word
LISBON = "what did I pay for the Lisbon apartment deposit"
SEAT = "seat number on my Porto flight"  # meaning finds the body; no lexical search does
PORTO_BODY = "/v1/streams/message_bodies/records/body_porto_trip/field-window"
SCHEMA_READ = ("/v1/schema", "")  # the compact schema, read alongside a fused answer's searches


async def _search(sandbox: Any, **arguments: Any) -> tuple[Any, list[tuple[str, str]]]:
    """The result and the RS reads it made: (path, q or field-window offset)."""
    async with RsClient(sandbox.url) as rs:
        context = GatewayContext.for_client(rs.bind(sandbox.tokens["client_broad"]), sandbox.url)
        sandbox.calls.clear()
        result = await build_pipeline()(ToolCall("search", arguments, context))
    reads = []
    for call in sandbox.calls:
        query = parse_qs(call.query)
        reads.append((call.path, (query.get("q") or query.get("offset_chars") or [""])[0]))
    return result, reads


async def test_a_question_searches_its_words_and_its_meaning_together(shared_sandbox: Any) -> None:
    asked = "what is on the offsite agenda"
    result, reads = await _search(shared_sandbox, query=asked)
    # its content words first (stop and question words dropped), then its meaning beside them:
    # words met by coincidence and answers in other words both lose a question otherwise
    assert reads[0] == ("/v1/search", "offsite agenda")
    assert ("/v1/search/hybrid", asked) in reads
    retrieval = result.structured["retrieval"]
    assert retrieval["mode"] == "fused"
    assert retrieval["why"] == WORDS_AND_MEANING
    assert [s["query"] for s in retrieval["searched"]][:1] == ["offsite agenda"]  # its hits lead
    assert "Team offsite agenda" in result.text
    assert "words and meaning searched side by side" in (result.text.lower())


async def test_a_longer_question_searches_its_fewer_words_and_its_meaning(shared_sandbox: Any) -> None:
    asked = "did they ever send out an agenda for the team offsite"
    result, reads = await _search(shared_sandbox, query=asked)
    # a record holding every word holds the most distinctive ones too: no search of every word
    # ("ever" frames a question: no search word; it would also stand for "everything")
    assert sorted(reads[:3]) == [SCHEMA_READ, ("/v1/search", "agenda offsite"), ("/v1/search/hybrid", asked)]
    assert ("/v1/search", "send agenda team offsite") not in reads
    retrieval = result.structured["retrieval"]
    assert retrieval["why"] == FEWER_WORDS_AND_MEANING
    assert [s["query"] for s in retrieval["searched"]][:2] == ["agenda offsite", asked]
    assert "Team offsite agenda" in result.text
    assert "Fused: fewer words and meaning; " in result.text


async def test_a_question_nothing_answers_says_what_was_searched_and_offers_no_search_made(
    shared_sandbox: Any,
) -> None:
    asked = "zebra quantum marmalade orchestra"
    result, reads = await _search(shared_sandbox, query=asked, streams=["pay_statements"])
    # its fewer words and its meaning, once each (a page of every word could find nothing more),
    # then each of the fewer words alone: no record holds the two together
    assert sorted(reads) == [
        SCHEMA_READ,
        ("/v1/search", "marmalade"),
        ("/v1/search", "marmalade orchestra"),
        ("/v1/search", "orchestra"),
        ("/v1/search/hybrid", asked),
    ]
    assert result.structured["results"] == []
    assert [(s["query"], s["hits"]) for s in result.structured["retrieval"]["searched"]] == [
        ("marmalade orchestra", 0),
        ("marmalade", 0),
        ("orchestra", 0),
        (asked, 0),
    ]
    assert (
        'Fused: fewer words and meaning; lexical "marmalade orchestra" (0) + lexical "marmalade" (0) + '
        'lexical "orchestra" (0) + hybrid on the question (0).\n' in (result.text)
    )
    assert (
        "No record holds these words or is near this meaning; when the answer is a field value" in result.text
    )
    assert "search {" not in result.text  # every search it could offer was made
    assert "Ordered by" not in result.text  # nothing to order


async def test_the_lisbon_deposit_is_found_in_a_person_s_words(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query=LISBON)
    # together: meaning-based search, the two most distinctive words and the grant's schema (for
    # the streams the question names: ``retrieval.stream_hints``)
    assert sorted(reads[:3]) == [
        SCHEMA_READ,
        ("/v1/search", "apartment deposit"),
        ("/v1/search/hybrid", LISBON),
    ]
    retrieval = result.structured["retrieval"]
    assert retrieval["mode"] == "fused"
    assert retrieval["order"] == "relevance"
    assert [(s["mode"], s["query"]) for s in retrieval["searched"]] == [
        ("lexical", "apartment deposit"),
        ("hybrid", LISBON),
    ]
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_lisbon_lease"
    # the fewer-word search found the body; the RS's meaning search sees only the first 2,048
    # characters of a field, where the deposit is not, and ranks its message instead
    assert first["found_by"] == ["lexical"]
    assert "1,850 EUR" in result.text  # the fact, in the first answer's text
    assert 'lexical "apartment deposit"' in result.text
    assert 'page its lexical hits with search {"query":"apartment deposit","mode":"lexical"}' in result.text
    assert len(result.structured["results"]) == 10  # a fused page shows ten unless limit says more


async def test_a_meaning_based_hit_shows_the_passage_of_its_long_field(
    shared_sandbox: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    without_words_apart(monkeypatch)  # no record holds "number flight": the meaning's list alone
    result, reads = await _search(shared_sandbox, query=SEAT)
    assert sorted(reads[:3]) == [SCHEMA_READ, ("/v1/search", "number flight"), ("/v1/search/hybrid", SEAT)]
    # meaning-based search ranks the mail's message first (its subject and opening); its snippet
    # is a preview of its body: the body stream is searched on the question, and the body found
    # read, the whole body for the passage (its first two windows: the first holds no passage
    # that answers), and shown at the message's rank: its link names that message, so the two
    # are one hit
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_porto_trip"
    assert first["body_of"] == "cin_mail_work/messages:msg_long_porto_trip"
    assert "cin_mail_work/messages:msg_long_porto_trip" not in [
        hit["id"] for hit in result.structured["results"]
    ]
    assert reads.count(("/v1/search/hybrid", SEAT)) == 2  # the question's own, and the bodies'
    assert [read for read in reads if read[0] == PORTO_BODY] == [(PORTO_BODY, "0"), (PORTO_BODY, "16384")]
    evidence = first["evidence"][0]  # the best of its answer windows
    assert evidence["provenance"] == "passage"
    assert evidence["at_chars"] > 20_000  # deep in the body, past the decoys
    assert evidence["read"]["arguments"]["offset_chars"] == evidence["at_chars"] - 300
    assert "22A" in evidence["preview"]
    assert f"evidence body_text (passage at char {evidence['at_chars']} of 58666)" in result.text
    assert "<mark>seat</mark> 22A" in result.text


async def test_a_body_read_for_its_windows_shows_the_appointment_once(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query="am I seeing the dentist soon")
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_dentist"
    # "when" is not said, but "soon" asks for a date: the window holding the appointment's date
    # is among the two shown, chosen sentence by sentence (meaning, rare words, a date)
    assert any("14 April at 09:30" in each["preview"] for each in first["evidence"])
    # the body found is hit 1, read already: its two windows read once, shown once
    assert [path for path, _ in reads].count(_window(first)) == 2
    assert result.text.count("14 April at 09:30") == 1


async def test_a_relaxed_lexical_snippet_that_holds_no_figure_is_read_for_its_passage(
    shared_sandbox: Any,
) -> None:
    result, reads = await _search(shared_sandbox, query="what is the booking ref of the porto flight")
    # "booking flight" found the body by its opening, which names both but gives no code
    assert ("/v1/search", "booking flight") in reads
    (body,) = [hit for hit in result.structured["results"] if hit["id"].endswith(":body_porto_trip")]
    assert body["found_by"][0] == "lexical"
    assert [offset for path, offset in reads if path == PORTO_BODY] == ["0", "16384"]
    evidence = body["evidence"][0]
    assert evidence["provenance"] == "passage"
    assert "QX7P2M" in evidence["preview"]  # the passage with the code, 28k characters in
    assert evidence["at_chars"] > 20_000


async def test_opening_hours_ask_for_a_figure(shared_sandbox: Any) -> None:
    # the mail's opening speaks of the gate opening during access hours more often than the
    # fact does; asking for hours asks for times, so the passage holding them wins
    result, _ = await _search(shared_sandbox, query="what are the opening hours of the storage gate")
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_storage_unit"
    assert "06:00 to 22:00" in first["evidence"][0]["preview"]


async def test_a_figure_question_shows_the_window_holding_the_amount(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query="how much money is in my pension")
    pension = "/v1/streams/message_bodies/records/body_pension/field-window"
    # the first page holds both words in a sentence with no amount; the body is read for the
    # windows that carry the answer: "how much" asks for an amount
    assert reads[0] == ("/v1/search", "money pension")
    assert (pension, "0") in reads
    first = result.structured["results"][0]
    assert any("48,200 EUR" in item["preview"] for item in first["evidence"])
    assert result.text.index("48,200 EUR") < result.text.index("[2] ")  # hit 1 shows the fact


async def test_a_long_text_shows_the_window_that_lists_what_was_asked(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query="what do I need to bring on the school trip")
    trip = "/v1/streams/message_bodies/records/body_school_trip/field-window"
    # the RS's snippet is its densest window, "The school trip to Sintra costs 35 EUR ...", 12,000
    # characters in, with no "bring": the field is read from its start (its first window holds
    # every word, "... the cost and what to bring are below", so the read ends there)
    assert ("/v1/search", "bring school") in reads  # its two longest words, beside its meaning
    assert (trip, "0") in reads
    # its two answer windows: the densest on the question's rarer words, and the list of what
    # to bring, which follows the line that introduces it
    (body,) = [hit for hit in result.structured["results"] if hit["record_id"] == "body_school_trip"]
    (listed,) = [e for e in body["evidence"] if "packed lunch" in e["preview"]]
    assert "What to <mark>bring</mark>. Please give your child a packed lunch" in listed["preview"]
    # its read more opens around that window
    arguments = listed["read"]["arguments"]
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_broad"]), shared_sandbox.url
        )
        window = await build_pipeline()(ToolCall("read_record_field", arguments, context))
    assert "Please give your child a packed lunch" in window.text


async def test_the_window_that_answers_in_other_words_comes_first(shared_sandbox: Any) -> None:
    result, _ = await _search(shared_sandbox, query="what did the mechanic charge me last time")
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_car_service"
    best = first["evidence"][0]
    # the answer says "the repair cost", not "charge": its amount and its meaning choose it
    # ahead of the opening, which repeats "time"
    assert "the repair cost 340 EUR" in best["preview"]
    assert best["read"]["arguments"]["offset_chars"] == best["at_chars"] - 300
    assert "340 EUR" in result.text


def _window(hit: dict[str, Any]) -> str:
    return f"/v1/streams/{hit['stream']}/records/{hit['record_id']}/field-window"


async def test_read_record_field_near_lands_on_the_passage(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_broad"]), shared_sandbox.url
        )
        arguments = {"id": "cin_mail_work/message_bodies:body_porto_trip", "field": "body_text", "near": SEAT}
        result = await build_pipeline()(ToolCall("read_record_field", arguments, context))
        absent = await build_pipeline()(
            ToolCall("read_record_field", {**arguments, "near": "zebra"}, context)
        )
    window = result.structured["window"]
    assert window["end_chars"] - window["start_chars"] == 1200
    assert window["start_chars"] < window["match_start_chars"] < window["end_chars"]
    assert "seat 22A" in window["text"]
    assert f"match at {window['match_start_chars']}" in result.text
    # a word the mail never uses: the sentence nearest it in meaning, and the text says so
    assert not absent.is_error
    assert absent.structured["passage"] == {"words_matched": 0, "words_asked": 1, "found_by": "meaning"}
    assert "no word of near occurs in the field: the sentence nearest it in meaning" in absent.text


async def test_a_near_read_in_other_words_lands_on_the_sentence_nearest_in_meaning(
    shared_sandbox: Any,
) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_broad"]), shared_sandbox.url
        )
        arguments = {
            "id": "cin_mail_work/message_bodies:body_porto_trip",
            "field": "body_text",
            "near": "which chair on the aircraft",  # neither word is in the mail: people paraphrase
        }
        result = await build_pipeline()(ToolCall("read_record_field", arguments, context))
    assert not result.is_error, result.text
    assert result.structured["passage"]["found_by"] == "meaning"
    window = result.structured["window"]
    sentence = "Your Porto booking confirmation code is QX7P2M for seat 22A on the morning flight."
    assert sentence in window["text"]  # whole: the window never ends inside it
    assert window["start_chars"] <= window["match_start_chars"] < window["end_chars"]


async def test_a_pinned_mode_is_exactly_that_mode(shared_sandbox: Any) -> None:
    result, reads = await _search(shared_sandbox, query=QUESTION, mode="lexical")
    assert reads == [("/v1/search", QUESTION)]
    assert result.structured["results"] == []
    assert "retrieval" not in result.structured
    assert "needs every word of the query in one record" in result.text
    assert 'search {"query":"flight booking","mode":"lexical"}' in result.text  # a ready call


async def test_an_empty_lexical_page_with_no_fewer_words_points_to_query_records(shared_sandbox: Any) -> None:
    result, _ = await _search(shared_sandbox, query="zebra", mode="lexical")
    assert result.structured["results"] == []
    assert (
        "none has them all. Or, when the answer is a field value, query_records on the likely stream "
        "reads its newest records first, with fields for only those that hold it (schema() lists the "
        "streams and their fields)."
    ) in result.text
    assert "filter" not in result.text  # a client grant token cannot filter: the RS refuses it
    assert ".;" not in result.text  # sentences, not glued fragments


async def test_words_met_by_coincidence_do_not_stop_the_search(shared_sandbox: Any) -> None:
    # one handover note holds "receipt" and "ordered", in two sentences: a coincidence; the
    # receipts the meaning search finds compete on the same page, judged the same way
    asked = "the receipt for something I ordered"
    result, reads = await _search(shared_sandbox, query=asked)
    assert reads[0] == ("/v1/search", "receipt ordered")
    assert ("/v1/search/hybrid", asked) in reads
    retrieval = result.structured["retrieval"]
    assert [(s["mode"], s["query"]) for s in retrieval["searched"]][:2] == [
        ("lexical", "receipt ordered"),
        ("hybrid", asked),
    ]
    assert "Receipt for order 20" in result.text  # the receipts meaning found, in the first answer


async def test_words_said_in_one_sentence_outrank_an_opening_that_names_them_in_two(
    shared_sandbox: Any,
) -> None:
    # the welcome mail opens with "the new office!" then "... and the wifi": as many of the
    # question's words as the fact's one sentence, 14,000 characters further in
    result, _ = await _search(shared_sandbox, query="what is the wifi network called at the new office")
    first = result.structured["results"][0]
    assert first["id"] == "cin_mail_work/message_bodies:body_office_wifi"
    assert "on the <mark>network</mark> Acme-Guest" in first["evidence"][0]["preview"]
    assert result.text.index("Acme-Guest") < result.text.index("[2] ")  # hit 1 shows the fact


async def test_each_member_of_a_package_fuses_on_its_own(sandbox: Any, tmp_path: Any) -> None:
    from pdpp_gateway.local.credentials import load_credentials
    from pdpp_gateway.local.package import MemberStart
    from pdpp_gateway.local.readers import caller_context
    from tests.grants import approve

    await approve(sandbox.url, tmp_path, "gmail")
    await approve(sandbox.url, tmp_path, "github")
    members = [MemberStart(c.provider_url, c) for c in load_credentials(sandbox.url, tmp_path)]
    async with contextlib.AsyncExitStack() as stack:
        context = await caller_context(stack, members, tmp_path)
        merged = await build_pipeline()(ToolCall("search", {"query": QUESTION}, context))
        # the passage's own words (the package's Home mail speaks of other flights and seats)
        seat = await build_pipeline()(ToolCall("search", {"query": "my seat on the Porto flight"}, context))
        pinned = await build_pipeline()(ToolCall("search", {"query": QUESTION, "mode": "lexical"}, context))
        schema = await build_pipeline()(ToolCall("schema", {}, context))
    # a local package of client grants says what its caller is (it said mcp_package)
    assert schema.structured["data"]["bearer"]["token_kind"] == "client"
    assert not merged.is_error, merged.text
    assert merged.structured["retrieval"]["mode"] == "fused"
    assert merged.structured["retrieval"]["sources"]
    assert "fewer words and meaning;" in merged.text
    # the Porto booking's message leads, from the mail member; a question with the passage's
    # own words reaches that passage
    assert merged.structured["results"][0]["id"] == "cin_mail_work/message_bodies:body_porto_trip"
    assert "QX7P2M for <mark>seat</mark> 22A" in seat.text
    assert pinned.structured["results"] == []
    assert "retrieval" not in pinned.structured


# --- streams the question names: a ready query_records call (``retrieval.stream_hints``) ---------

PAYSLIP = "What was my take-home pay on my most recent payslip?"
EARLIEST = "What was my gross salary on the earliest payslip I have?"
ATTACHMENT = "Dev sent me a file with one of the budget review emails. What was the attachment?"
GYM = "when does my gym membership renew"  # Slack channels has member_count
RETIREMENT = "Roughly how much have I got saved up for retirement?"  # Spotify has saved_tracks
LEASE_FILE = "What's the file called that the landlord sent me along with the lease renewal?"


def _printed_calls(text: str) -> list[tuple[str, dict[str, Any]]]:
    """The query_records calls the text's stream lines spell out, as a model would copy them."""
    decoder, calls = json.JSONDecoder(), []
    for line in text.splitlines():
        if line.startswith("Structured data may answer this:"):
            start = line.index("query_records {") + len("query_records ")
            calls.append(("query_records", decoder.raw_decode(line, start)[0]))
    return calls


def _schema_reads(sandbox: Any) -> int:
    return sum(call.path == "/v1/schema" for call in sandbox.calls)


async def _compact_schema(sandbox: Any) -> Any:
    """The broad grant's compact schema, as the search reads it."""
    async with RsClient(sandbox.url) as rs:
        schema = await rs.bind(sandbox.tokens["client_broad"]).get_json("/v1/schema", [("view", "compact")])
    return schema.body


def _named_streams(schema: Any, question: str) -> list[tuple[str, list[str]]]:
    return [
        (hint["stream"], hint["words"])
        for hint in stream_hints(schema, content_words(question), question, ())
    ]


async def test_a_payslip_question_offers_the_read_that_answers_it(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_broad"]), shared_sandbox.url
        )
        shared_sandbox.calls.clear()
        latest = await build_pipeline()(ToolCall("search", {"query": PAYSLIP}, context))
        first_reads = _schema_reads(shared_sandbox)
        shared_sandbox.calls.clear()
        earliest = await build_pipeline()(ToolCall("search", {"query": EARLIEST}, context))
        steady_reads = _schema_reads(shared_sandbox)
        ((tool, arguments),) = _printed_calls(latest.text)
        net = await build_pipeline()(ToolCall(tool, arguments, context))
        ((tool, arguments),) = _printed_calls(earliest.text)
        gross = await build_pipeline()(ToolCall(tool, arguments, context))
    assert (first_reads, steady_reads) == (1, 0)  # the schema is read once, then from the memo
    assert latest.structured["retrieval"]["mode"] == "fused"  # fewer words and meaning
    (hint,) = latest.structured["stream_hints"]
    assert (hint["stream"], hint["connection_id"], hint["words"]) == (
        "pay_statements",
        "cin_northstar",
        ["pay", "payslip"],
    )
    assert (
        "Structured data may answer this: stream pay_statements of northstar-hr (Northstar HR) matches "
        '"pay", "payslip"; its records newest first by issued_at: query_records {"stream":"pay_statements",'
        '"connection_id":"cin_northstar","order":"desc","limit":3}'
    ) in latest.text
    assert not net.is_error, net.text
    assert net.structured["data"]["data"][0]["data"]["net_amount"] == 3406.0  # the newest payslip
    assert '"net_amount":3406.0' in net.text
    # the earliest, projected to the field the question names: the meaning search's nearest
    # mails answer nothing of it, and the hint still reads the stream that does
    assert all(hit["stream"] != "pay_statements" for hit in earliest.structured["results"])
    assert earliest.structured["stream_hints"][0]["call"]["arguments"] == {
        "stream": "pay_statements",
        "connection_id": "cin_northstar",
        "fields": ["issued_at", "gross_amount"],
        "order": "asc",
        "limit": 3,
    }
    assert gross.structured["data"]["data"][0]["data"] == {
        "issued_at": "2025-05-26T00:00:00.000Z",
        "gross_amount": 4200.0,
    }


async def test_a_projected_stream_hint_keeps_the_field_that_names_each_record(shared_sandbox: Any) -> None:
    # "stars" is a field of repositories: the ready call reads that field, and the repository's
    # name beside it, or the answer would be "R005: 113 stars" with nothing a person knows it by
    result, _ = await _search(shared_sandbox, query="which of my repositories has the most stars")
    (hint,) = [hint for hint in result.structured["stream_hints"] if hint["stream"] == "repositories"]
    arguments = hint["call"]["arguments"]
    assert arguments["fields"] == ["created_at", "full_name", "stars"]
    assert f"query_records {json.dumps(arguments, separators=(',', ':'), ensure_ascii=False)}" in result.text
    async with RsClient(shared_sandbox.url) as rs:
        context = GatewayContext.for_client(
            rs.bind(shared_sandbox.tokens["client_broad"]), shared_sandbox.url
        )
        read = await build_pipeline()(ToolCall("query_records", arguments, context))
    assert not read.is_error, read.text
    for record in read.structured["data"]["data"]:
        assert set(record["data"]) == {"created_at", "full_name", "stars"}
        assert f'"full_name":"{record["data"]["full_name"]}"' in (read.text or "")


async def test_a_question_naming_no_stream_gets_no_stream_line(shared_sandbox: Any) -> None:
    for arguments in (
        {"query": QUESTION},
        {"query": LISBON},  # its "pay": the first hit already says "payable"
        {"query": RETIREMENT},  # "saved" (up) says what was done: not Spotify's saved_tracks
        {"query": PAYSLIP, "streams": ["messages", "message_bodies"]},  # pay_statements not searched
        {"query": PAYSLIP, "connection_id": "cin_mail_work"},
    ):
        result, reads = await _search(shared_sandbox, **arguments)
        assert SCHEMA_READ in reads
        assert result.structured["retrieval"]["mode"] == "fused"
        assert "stream_hints" not in result.structured
        assert "Structured data may answer this" not in result.text
        assert "query_records {" not in result.text


async def test_a_pinned_lexical_search_reads_no_schema(shared_sandbox: Any) -> None:
    query = "offsite planning pay"  # "pay" names a stream
    result, reads = await _search(shared_sandbox, query=query, mode="lexical")
    assert reads == [("/v1/search", query)]  # one read: no schema, no hint
    assert result.structured["results"]
    assert "stream_hints" not in result.structured


async def test_a_word_names_a_stream_as_a_thing_not_as_a_deed_or_a_longer_word(shared_sandbox: Any) -> None:
    schema = await _compact_schema(shared_sandbox)
    # "membership" begins with member_count's "member" but says more than it; "saved" (up for
    # retirement) says what was done, and "tracks" still names saved_tracks
    assert _named_streams(schema, GYM) == []
    assert _named_streams(schema, RETIREMENT) == []
    assert _named_streams(schema, "which tracks have I saved")[0] == ("saved_tracks", ["tracks"])
    # a part beginning with the word still names it ("filename" of "file"), and nouns their streams
    assert _named_streams(schema, LEASE_FILE) == [("attachments", ["file"])]
    assert _named_streams(schema, PAYSLIP) == [("pay_statements", ["pay", "payslip"])]
    # a compound of a part and another word names it ("payslip" of pay_statements' "pay")
    assert _named_streams(schema, "how much was my last payslip") == [("pay_statements", ["payslip"])]
    # "pay" right after the one who pays is a deed: paying a garage is no pay statement
    assert _named_streams(schema, "how much did I pay to get the car fixed") == []
    assert _named_streams(schema, "did my pay go up this year") == [("pay_statements", ["pay"])]
    assert _named_streams(schema, EARLIEST) == [("pay_statements", ["gross", "payslip"])]
    found, _ = await _search(shared_sandbox, query=LEASE_FILE)
    assert (
        'Structured data may answer this: stream attachments of gmail matches "file" (fields filename); '
        'its records newest first by message_received_at: query_records {"stream":"attachments",'
        '"fields":["message_received_at","filename"],"order":"desc","limit":3}'
    ) in found.text


async def test_a_stream_among_the_hits_is_not_hinted(shared_sandbox: Any) -> None:
    result, _ = await _search(shared_sandbox, query=ATTACHMENT)
    shown = {hit["stream"] for hit in result.structured["results"]}
    named = stream_hints(await _compact_schema(shared_sandbox), content_words(ATTACHMENT), ATTACHMENT, ())
    # messages names "emails" and "attachment" (from_email, has_attachments), but its records are hits
    assert [hint["stream"] for hint in named] == ["attachments", "messages"]
    assert "messages" in shown
    assert [hint["stream"] for hint in result.structured["stream_hints"]] == ["attachments"]
    assert result.text.count("Structured data may answer this") == 1


async def test_a_failed_schema_read_only_drops_the_stream_line(shared_sandbox: Any) -> None:
    async with (
        upstream_proxy(shared_sandbox.url, refuse_compact=True) as proxy,
        RsClient(proxy.url) as rs,
    ):
        context = GatewayContext.for_client(rs.bind(shared_sandbox.tokens["client_broad"]), proxy.url)
        result = await build_pipeline()(ToolCall("search", {"query": PAYSLIP}, context))
    assert "GET /v1/schema?view=compact" in proxy.lines()
    assert not result.is_error, result.text
    assert result.structured["retrieval"]["mode"] == "fused"
    assert "stream_hints" not in result.structured


async def test_a_package_offers_its_member_s_stream(shared_sandbox: Any) -> None:
    async with RsClient(shared_sandbox.url) as rs:
        context = mail_and_chat(rs, rs, shared_sandbox.tokens, shared_sandbox.url)
        found = await build_pipeline()(ToolCall("search", {"query": ATTACHMENT}, context))
        ((tool, arguments),) = _printed_calls(found.text)
        files = await build_pipeline()(ToolCall(tool, arguments, context))
    assert arguments["connection_id"] == "cin_mail_work"  # the member granting it, so the call routes
    assert not files.is_error, files.text
    assert {record["data"]["filename"] for record in files.structured["data"]["data"]} == {
        "receipt.png",
        "lease-2026.pdf",
    }
