"""Deterministic sample data for the sandbox RS: one person's mail, chat, code, music and pay.

Contract: ``generate(bulk_records)`` always returns the same records for the same
argument (one seeded generator, drawn from in a fixed order; the mail comes from
``sample_mail``, the material from ``sample_content``, the shapes from ``dataset``). The
data stresses the gateway on purpose:

- two mail connections ("Work", "Personal") sharing stream names, and one record id
  (``msg_shared_0001``) present in both (ambiguous without ``connection_id``);
- ``messages`` under both gmail and slack (a stream name shared across connectors);
- long ``body_text`` fields (tens of KB) with facts buried deep inside behind decoys
  (``sample_mail.BURIED_FACTS``, ``sample_facts``: a person's facts in mail, chat and
  issues), so evidence must be found and read in windows;
- real PNG and PDF blobs referenced by ``blob_ref`` fields;
- timestamps spread over ~18 months (2025-05 .. 2026-10) for time buckets;
- more than 100 rows in several streams (several pages), and deleted records
  (tombstones) for ``changes_since``;
- last, a second corpus written as a person's data reads (``corpus``: Home mail threads,
  Orbit Labs Slack and GitHub issues with their comments, ChatGPT conversations), the data
  of the question set nobody tuned to.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Any

from pdpp_gateway.sandbox.corpus import add_corpus
from pdpp_gateway.sandbox.dataset import Blob, Dataset, Row
from pdpp_gateway.sandbox.manifests import BULK, GITHUB, HR, SLACK, SPOTIFY
from pdpp_gateway.sandbox.sample_content import (
    START,
    WORDS,
    blob_ref,
    iso,
    png,
    prose,
    random_moment,
    sentence,
)
from pdpp_gateway.sandbox.sample_facts import add_facts
from pdpp_gateway.sandbox.sample_mail import add_mail


def _chat(dataset: Dataset, rng: random.Random) -> None:
    cid = SLACK.connection_id
    channels = ("general", "engineering", "design", "random", "travel", "finance")
    for n, name in enumerate(channels):
        dataset.rows.append(
            Row(
                "slack",
                cid,
                "channels",
                f"C{n:04d}",
                {
                    "id": f"C{n:04d}",
                    "name": name,
                    "topic": f"Talk about {name} and the quarterly roadmap",
                    "member_count": 5 + 7 * n,
                    "created_at": iso(START + timedelta(days=n)),
                },
            )
        )
    people = ("ana", "bob", "carla", "dev", "erin")
    for n in range(180):
        text = sentence(rng) + (" The invoice for Lisbon is attached." if n % 37 == 0 else "")
        dataset.rows.append(
            Row(
                "slack",
                cid,
                "messages",
                f"M{n:05d}",
                {
                    "id": f"M{n:05d}",
                    "channel_id": f"C{n % len(channels):04d}",
                    "user_name": rng.choice(people),
                    "text": text,
                    "sent_at": iso(random_moment(rng)),
                    "reaction_count": rng.randrange(6),
                },
            )
        )


def _code(dataset: Dataset, rng: random.Random) -> None:
    cid = GITHUB.connection_id
    repositories = (
        "octocat/garden",
        "octocat/budget-tool",
        "octocat/travel-planner",
        "octocat/dotfiles",
        "octocat/pdpp-experiments",
        "octocat/recipes",
        "octocat/photo-sorter",
        "octocat/lisbon-guide",
    )
    languages = ("Python", "TypeScript", "Go", "Rust")
    for n, name in enumerate(repositories):
        dataset.rows.append(
            Row(
                "github",
                cid,
                "repositories",
                f"R{n:03d}",
                {
                    "id": f"R{n:03d}",
                    "full_name": name,
                    "description": f"{sentence(rng)} ({name.split('/')[1]})",
                    "language": languages[n % len(languages)],
                    "stars": rng.randrange(200),
                    "created_at": iso(START + timedelta(days=20 * n)),
                },
            )
        )
    for n in range(45):
        long = n % 9 == 0
        body = "## Steps to reproduce\n\n" + prose(rng, 12_000 if long else 500) + "\n\n- [ ] fix\n- [ ] test"
        dataset.rows.append(
            Row(
                "github",
                cid,
                "issues",
                f"I{n:04d}",
                {
                    "id": f"I{n:04d}",
                    "repository": repositories[n % len(repositories)],
                    "number": n + 1,
                    "title": f"{rng.choice(('Crash when', 'Slow', 'Add support for', 'Docs for'))} {rng.choice(WORDS)} {rng.choice(WORDS)}",
                    "body": body,
                    "state": "open" if n % 3 else "closed",
                    "comments": rng.randrange(12),
                    "created_at": iso(random_moment(rng)),
                },
            )
        )


def _music(dataset: Dataset, rng: random.Random) -> None:
    cid = SPOTIFY.connection_id
    artists = (
        "Madredeus",
        "Ana Moura",
        "Bonobo",
        "Khruangbin",
        "Nils Frahm",
        "Rosalia",
        "Air",
        "Caetano Veloso",
        "Floating Points",
        "Mariza",
        "Tycho",
        "Bebel Gilberto",
    )
    cover = Blob("blob_cover_png", "image/png", png(8, 8))
    dataset.blobs[cover.blob_id] = cover
    for n, artist in enumerate(artists):
        dataset.rows.append(
            Row(
                "spotify",
                cid,
                "top_artists",
                f"A{n:03d}",
                {
                    "id": f"A{n:03d}",
                    "name": artist,
                    "genres": ["fado"] if n % 4 == 1 else ["electronic"],
                    "popularity": 40 + 4 * n,
                    "source_updated_at": iso(START + timedelta(days=500 + n)),
                },
            )
        )
    for n in range(30):
        track: dict[str, Any] = {
            "id": f"S{n:03d}",
            "track_id": f"T{n:03d}",
            "name": f"{rng.choice(WORDS).title()} {rng.choice(WORDS)}",
            "artist": artists[n % len(artists)],
            "added_at": iso(random_moment(rng)),
        }
        if n == 0:
            track["cover_art"] = blob_ref(cover)
        dataset.rows.append(Row("spotify", cid, "saved_tracks", track["id"], track))
    for n in range(150):
        t = n % 30
        dataset.rows.append(
            Row(
                "spotify",
                cid,
                "recently_played",
                f"P{n:04d}",
                {
                    "id": f"P{n:04d}",
                    "track_id": f"T{t:03d}",
                    "track_name": f"Track {t}",
                    "artist": artists[t % len(artists)],
                    "played_at": iso(random_moment(rng)),
                    "ms_played": 60_000 + rng.randrange(180_000),
                },
            )
        )


def _pay(dataset: Dataset) -> None:
    cid = HR.connection_id
    for n in range(18):
        issued = START + timedelta(days=30 * n + 25)
        dataset.rows.append(
            Row(
                "northstar-hr",
                cid,
                "pay_statements",
                f"PS{n:03d}",
                {
                    "statement_id": f"PS{n:03d}",
                    "issued_at": iso(issued),
                    "pay_period_end": iso(issued - timedelta(days=1)),
                    "gross_amount": 4200.0 + 25 * n,
                    "net_amount": 3100.0 + 18 * n,
                    "currency": "EUR",
                    "employer": "Northstar Ltd",
                },
            )
        )


def _bulk(dataset: Dataset, count: int) -> None:
    rng = random.Random(99)  # noqa: S311 - deterministic sample data, not secrets
    cid = BULK.connection_id
    kinds = ("click", "view", "purchase", "search", "share")
    for n in range(count):
        dataset.rows.append(
            Row(
                "bulk",
                cid,
                "events",
                f"E{n:07d}",
                {
                    "id": f"E{n:07d}",
                    "kind": kinds[n % len(kinds)],
                    "text": sentence(rng),
                    "occurred_at": iso(START + timedelta(minutes=7 * n)),
                    "value": rng.randrange(1000),
                },
            )
        )


def generate(bulk_records: int = 0) -> Dataset:
    rng = random.Random(7)  # noqa: S311 - deterministic sample data, not secrets
    dataset = Dataset()
    add_mail(dataset, rng)
    _chat(dataset, rng)
    _code(dataset, rng)
    _music(dataset, rng)
    _pay(dataset)
    add_facts(dataset)
    add_corpus(dataset)
    if bulk_records:
        _bulk(dataset, bulk_records)
    return dataset
