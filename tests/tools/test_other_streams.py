"""A search whose page shows none of the question's words names the grant's other streams.

"Which band have I been listening to the most lately" shares no word with any text the demo's
grant holds, and no stream's name says "band": meaning-based search answers with flight
confirmations. The answer is data (a music service's top artists), so the page says its hits
are guesses and names the streams none of them is of, by source, and the read a model makes
from that line answers. A page that shows a word of the question says nothing of the kind.
"""

from __future__ import annotations

from typing import Any

from pdpp_gateway.retrieval.other_streams import OTHER_STREAMS, merge_other_streams
from tests.tools.calls import call_tool

BAND = "which band have I been listening to the most lately"


async def test_a_page_of_guesses_names_the_streams_that_hold_data(shared_sandbox: Any) -> None:
    result = await call_tool(shared_sandbox, "search", {"query": BAND})
    text = result.text or ""
    assert "<mark>" not in text  # no hit shows a word of the question
    line = next(line for line in text.splitlines() if line.startswith("No hit shows a word of the question"))
    assert "spotify (Spotify) (connection_id cin_spotify): top_artists, saved_tracks, recently_played" in line
    assert line.index("No hit shows") < text.index("\n[1] ")  # said before the guesses
    spotify = next(
        entry for entry in result.structured[OTHER_STREAMS] if entry["source"].startswith("spotify")
    )
    assert spotify == {
        "source": "spotify (Spotify)",
        "connection_id": "cin_spotify",
        "streams": ["top_artists", "saved_tracks", "recently_played"],
    }
    shown = {(hit["stream"], hit["connection_id"]) for hit in result.structured["results"]}
    for entry in result.structured[OTHER_STREAMS]:  # none of them is a stream a hit is of
        assert not shown & {(name, entry.get("connection_id")) for name in entry["streams"]}
    # the read a model makes from the line answers: the artists, ranked
    read = await call_tool(
        shared_sandbox, "query_records", {"stream": "top_artists", "connection_id": "cin_spotify"}
    )
    assert read.structured["data"]["data"]


async def test_a_page_that_shows_a_word_names_no_other_stream(shared_sandbox: Any) -> None:
    result = await call_tool(shared_sandbox, "search", {"query": "when does my gym membership renew"})
    assert OTHER_STREAMS not in result.structured
    assert "No hit shows a word" not in (result.text or "")


def test_a_merged_package_page_of_guesses_names_its_members_other_streams() -> None:
    guesses = [{"id": "a", "stream": "messages", "connection_id": "mail", "snippet": "Flight confirmation"}]
    members = [
        {OTHER_STREAMS: [{"source": "mail", "connection_id": "mail", "streams": ["threads", "messages"]}]},
        {OTHER_STREAMS: [{"source": "music", "connection_id": "music", "streams": ["top_artists"]}]},
    ]
    merged: dict[str, Any] = {"results": guesses}
    merge_other_streams(merged, members, ("band",))
    assert merged[OTHER_STREAMS] == [  # the merged page's own stream left out
        {"source": "mail", "connection_id": "mail", "streams": ["threads"]},
        {"source": "music", "connection_id": "music", "streams": ["top_artists"]},
    ]
    worded: dict[str, Any] = {"results": [{**guesses[0], "snippet": "your <mark>band</mark>"}]}
    merge_other_streams(worded, members, ("band",))
    assert OTHER_STREAMS not in worded
