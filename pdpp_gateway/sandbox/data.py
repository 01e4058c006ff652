"""Deterministic sample data for the sandbox RS: one person's mail, chat, code, music and pay.

Contract: ``generate(bulk_records)`` always returns the same records for the same
argument. The data stresses the gateway on purpose:

- two mail connections ("Work", "Personal") sharing stream names, and one record id
  (``msg_shared_0001``) present in both (ambiguous without ``connection_id``);
- ``messages`` under both gmail and slack (a stream name shared across connectors);
- long ``body_text`` fields (tens of KB) with facts buried deep inside
  (``BURIED_FACTS``), so evidence must be read in windows;
- real PNG and PDF blobs referenced by ``blob_ref`` fields;
- timestamps spread over ~18 months (2025-05 .. 2026-10) for time buckets;
- more than 100 rows in several streams (several pages), and deleted records
  (tombstones) for ``changes_since``.
"""

from __future__ import annotations

import hashlib
import random
import struct
import zlib
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from pdpp_gateway.sandbox.manifests import BULK, GITHUB, HR, MAIL_PERSONAL, MAIL_WORK, SLACK, SPOTIFY

EMITTED_AT: Final = "2026-11-01T00:00:00.000Z"
START: Final = datetime(2025, 5, 1, tzinfo=UTC)
SPAN_DAYS: Final = 548

# Facts placed deep inside long bodies: (record id, phrase). Tests search for a word of the
# phrase and must read a window around it to quote the whole fact.
BURIED_FACTS: Final = {
    "body_lisbon_lease": "The security deposit for the Lisbon apartment is 1,850 EUR, payable by 3 March.",
    "body_storage_unit": "Your storage unit locker code is 4417-B and the gate opens from 06:00 to 22:00.",
    "body_porto_trip": "Your Porto booking confirmation code is QX7P2M for seat 22A on the morning flight.",
}
# The facts' key words again, WITHOUT the answer, earlier in the same bodies (each in its own
# paragraph, far apart): only a window at the previewed match answers, not the first occurrence.
DECOYS: Final = {
    "body_lisbon_lease": (
        "Deposit questions go to the landlord office.",
        "The Lisbon apartment inventory is attached.",
    ),
    "body_storage_unit": ("Locker code changes are announced by email.", "Storage unit prices rise in May."),
    "body_porto_trip": ("A confirmation email follows separately.", "Porto airport opens at 05:00."),
}

# Messages that carry the attachments rows of ``_mail`` (their ``has_attachments`` flag agrees).
_ATTACHED: Final = frozenset({"msg_work_0003"})

_WORDS: Final = [
    "project",
    "timeline",
    "review",
    "budget",
    "quarterly",
    "planning",
    "meeting",
    "notes",
    "follow",
    "up",
    "proposal",
    "draft",
    "contract",
    "schedule",
    "delivery",
    "invoice",
    "payment",
    "reminder",
    "travel",
    "itinerary",
    "hotel",
    "booking",
    "conference",
    "agenda",
    "design",
    "feedback",
    "release",
    "roadmap",
    "customer",
    "support",
    "ticket",
    "update",
    "summary",
    "weekly",
    "report",
    "analysis",
    "forecast",
    "expenses",
    "approval",
    "renewal",
    "subscription",
    "account",
    "statement",
    "receipt",
    "team",
    "offsite",
    "workshop",
    "training",
]
_PEOPLE: Final = (
    ("Ana Ribeiro", "ana@acme.test"),
    ("Bob Martins", "bob@acme.test"),
    ("Carla Sousa", "carla@northwind.test"),
    ("Dev Patel", "dev@globex.test"),
    ("Travel Desk", "noreply@airline.test"),
    ("Landlord Office", "rent@lisbonhomes.test"),
    ("City Storage", "hello@citystorage.test"),
    ("Mum", "mum@family.test"),
    ("Bank", "alerts@bank.test"),
)
_SUBJECTS: Final = (
    "Invoice {n} for consulting services",
    "Quarterly budget review",
    "Flight confirmation: Lisbon LIS",
    "Lease renewal for the Lisbon apartment",
    "Team offsite agenda",
    "Your storage unit access details",
    "Porto weekend trip booking",
    "Weekly project update",
    "Contract draft for review",
    "Receipt for order {n}",
    "Dinner on Sunday?",
    "Conference talk proposal",
    "Subscription renewal notice",
    "Expense report approval",
)


@dataclass(frozen=True, slots=True)
class Row:
    connector: str
    connection_id: str
    stream: str
    record_id: str
    data: dict[str, Any]
    emitted_at: str = EMITTED_AT
    deleted_at: str | None = None


@dataclass(frozen=True, slots=True)
class Blob:
    blob_id: str
    mime_type: str
    content: bytes


@dataclass(slots=True)
class Dataset:
    rows: list[Row] = field(default_factory=list)
    blobs: dict[str, Blob] = field(default_factory=dict)


def _iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def _moment(rng: random.Random) -> datetime:
    return START + timedelta(
        days=rng.randrange(SPAN_DAYS), hours=rng.randrange(24), minutes=rng.randrange(60)
    )


def _sentence(rng: random.Random) -> str:
    words = [rng.choice(_WORDS) for _ in range(rng.randrange(8, 16))]
    return " ".join(words).capitalize() + "."


def _prose(rng: random.Random, chars: int) -> str:
    parts: list[str] = []
    size = 0
    while size < chars:
        paragraph = " ".join(_sentence(rng) for _ in range(rng.randrange(3, 7)))
        parts.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(parts)


def _with_decoys(text: str, decoys: tuple[str, ...], spacing: int = 1500) -> str:
    """``text`` with each decoy as its own paragraph, at paragraph breaks ``spacing`` apart."""
    position = 0
    for decoy in decoys:
        cut = text.find("\n\n", position + spacing)
        if cut < 0:
            break
        text = f"{text[:cut]}\n\n{decoy}{text[cut:]}"
        position = cut + len(decoy) + 2
    return text


def _png(width: int = 4, height: int = 4) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return (
            struct.pack(">I", len(body))
            + kind
            + body
            + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
        )

    raw = b"".join(b"\x00" + bytes([200, 40, 40]) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def _pdf(text: str) -> bytes:
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
        b"<< /Length " + str(len(stream)).encode() + b" >>\nstream\n" + stream + b"\nendstream",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += f"{number} 0 obj\n".encode() + body + b"\nendobj\n"
    xref = len(out)
    out += f"xref\n0 {len(objects) + 1}\n0000000000 65535 f \n".encode()
    out += b"".join(f"{offset:010d} 00000 n \n".encode() for offset in offsets)
    out += f"trailer\n<< /Size {len(objects) + 1} /Root 1 0 R >>\nstartxref\n{xref}\n%%EOF\n".encode()
    return bytes(out)


def _blob_ref(blob: Blob) -> dict[str, Any]:
    return {
        "blob_id": blob.blob_id,
        "mime_type": blob.mime_type,
        "size_bytes": len(blob.content),
        "sha256": hashlib.sha256(blob.content).hexdigest(),
    }


def _mail(dataset: Dataset, rng: random.Random) -> None:
    receipt = Blob("blob_receipt_png", "image/png", _png())
    lease = Blob("blob_lease_pdf", "application/pdf", _pdf("Lisbon apartment lease 2026"))
    dataset.blobs.update({receipt.blob_id: receipt, lease.blob_id: lease})
    for connection, count in ((MAIL_WORK, 140), (MAIL_PERSONAL, 60)):
        cid = connection.connection_id
        threads: dict[str, dict[str, Any]] = {}
        for n in range(count):
            record_id = f"msg_{cid[9:]}_{n:04d}"
            sender, email = rng.choice(_PEOPLE)
            subject = rng.choice(_SUBJECTS).format(n=2026000 + n)
            moment = _moment(rng)
            thread_id = f"thr_{cid[9:]}_{n // 3:04d}"
            body = _prose(rng, rng.choice((600, 1200, 2500)))
            _add_message(dataset, cid, record_id, thread_id, subject, sender, email, moment, body, n)
            thread = threads.setdefault(
                thread_id,
                {"id": thread_id, "subject": subject, "message_count": 0, "last_message_date": _iso(moment)},
            )
            thread["message_count"] += 1
            thread["last_message_date"] = max(thread["last_message_date"], _iso(moment))
        for thread in threads.values():
            dataset.rows.append(Row("gmail", cid, "threads", thread["id"], thread))
        # the same record id under both connections: reads without connection_id are ambiguous
        moment = START + timedelta(days=200 + (0 if connection is MAIL_WORK else 3))
        _add_message(
            dataset,
            cid,
            "msg_shared_0001",
            f"thr_{cid[9:]}_shared",
            "Shared calendar invite: family dinner",
            "Mum",
            "mum@family.test",
            moment,
            "Dinner on Sunday at 19:30, bring dessert.",
            1,
        )
    work = MAIL_WORK.connection_id
    long_bodies = (
        (
            "body_lisbon_lease",
            "Lease renewal for the Lisbon apartment",
            "Landlord Office",
            "rent@lisbonhomes.test",
            41_000,
        ),
        (
            "body_storage_unit",
            "Your storage unit access details",
            "City Storage",
            "hello@citystorage.test",
            23_000,
        ),
        ("body_porto_trip", "Porto weekend trip booking", "Travel Desk", "noreply@airline.test", 56_000),
    )
    for record_id, subject, sender, email, size in long_bodies:
        moment = _moment(rng)
        first = _with_decoys(_prose(rng, size // 2), DECOYS[record_id])
        text = first + "\n\n" + BURIED_FACTS[record_id] + "\n\n" + _prose(rng, size // 2)
        message_id = f"msg_long_{record_id[5:]}"
        dataset.rows.append(
            Row(
                "gmail",
                work,
                "messages",
                message_id,
                {
                    "id": message_id,
                    "thread_id": f"thr_long_{record_id[5:]}",
                    "subject": subject,
                    "from_name": sender,
                    "from_email": email,
                    "to": ["me@example.com"],
                    "labels": ["INBOX", "IMPORTANT"],
                    "snippet": text[:90],
                    "received_at": _iso(moment),
                    "size_bytes": len(text) + 900,
                    "is_seen": False,
                    "has_attachments": record_id == "body_lisbon_lease",
                },
            )
        )
        dataset.rows.append(
            Row(
                "gmail",
                work,
                "message_bodies",
                record_id,
                {
                    "id": record_id,
                    "message_id": message_id,
                    "body_text": text,
                    "body_text_bytes": len(text.encode()),
                    "message_received_at": _iso(moment),
                },
            )
        )
    for n, (blob, name, message_id) in enumerate(
        ((receipt, "receipt.png", "msg_work_0003"), (lease, "lease-2026.pdf", "msg_long_lisbon_lease"))
    ):
        dataset.rows.append(
            Row(
                "gmail",
                work,
                "attachments",
                f"att_{n:04d}",
                {
                    "id": f"att_{n:04d}",
                    "message_id": message_id,
                    "filename": name,
                    "content_type": blob.mime_type,
                    "size_bytes": len(blob.content),
                    "blob_ref": _blob_ref(blob),
                    "message_received_at": _iso(START + timedelta(days=30 * (n + 1))),
                },
            )
        )
    for n in (7, 8):  # deleted mail, visible to changes_since as tombstones
        record_id = f"msg_deleted_{n:04d}"
        dataset.rows.append(
            Row(
                "gmail",
                work,
                "messages",
                record_id,
                {"id": record_id},
                deleted_at=_iso(START + timedelta(days=400 + n)),
            )
        )


def _add_message(
    dataset: Dataset,
    cid: str,
    record_id: str,
    thread_id: str,
    subject: str,
    sender: str,
    email: str,
    moment: datetime,
    body: str,
    n: int,
) -> None:
    dataset.rows.append(
        Row(
            "gmail",
            cid,
            "messages",
            record_id,
            {
                "id": record_id,
                "thread_id": thread_id,
                "subject": subject,
                "from_name": sender,
                "from_email": email,
                "to": ["me@example.com"],
                "labels": ["INBOX"] if n % 4 else ["INBOX", "IMPORTANT"],
                "snippet": body[:90],
                "received_at": _iso(moment),
                "size_bytes": len(body) + 700,
                "is_seen": n % 3 != 0,
                "has_attachments": record_id in _ATTACHED,
            },
        )
    )
    dataset.rows.append(
        Row(
            "gmail",
            cid,
            "message_bodies",
            f"body_{record_id[4:]}",
            {
                "id": f"body_{record_id[4:]}",
                "message_id": record_id,
                "body_text": body,
                "body_text_bytes": len(body.encode()),
                "message_received_at": _iso(moment),
            },
        )
    )


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
                    "created_at": _iso(START + timedelta(days=n)),
                },
            )
        )
    people = ("ana", "bob", "carla", "dev", "erin")
    for n in range(180):
        text = _sentence(rng) + (" The invoice for Lisbon is attached." if n % 37 == 0 else "")
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
                    "sent_at": _iso(_moment(rng)),
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
                    "description": f"{_sentence(rng)} ({name.split('/')[1]})",
                    "language": languages[n % len(languages)],
                    "stars": rng.randrange(200),
                    "created_at": _iso(START + timedelta(days=20 * n)),
                },
            )
        )
    for n in range(45):
        long = n % 9 == 0
        body = (
            "## Steps to reproduce\n\n" + _prose(rng, 12_000 if long else 500) + "\n\n- [ ] fix\n- [ ] test"
        )
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
                    "title": f"{rng.choice(('Crash when', 'Slow', 'Add support for', 'Docs for'))} {rng.choice(_WORDS)} {rng.choice(_WORDS)}",
                    "body": body,
                    "state": "open" if n % 3 else "closed",
                    "comments": rng.randrange(12),
                    "created_at": _iso(_moment(rng)),
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
    cover = Blob("blob_cover_png", "image/png", _png(8, 8))
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
                    "source_updated_at": _iso(START + timedelta(days=500 + n)),
                },
            )
        )
    for n in range(30):
        track: dict[str, Any] = {
            "id": f"S{n:03d}",
            "track_id": f"T{n:03d}",
            "name": f"{rng.choice(_WORDS).title()} {rng.choice(_WORDS)}",
            "artist": artists[n % len(artists)],
            "added_at": _iso(_moment(rng)),
        }
        if n == 0:
            track["cover_art"] = _blob_ref(cover)
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
                    "played_at": _iso(_moment(rng)),
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
                    "issued_at": _iso(issued),
                    "pay_period_end": _iso(issued - timedelta(days=1)),
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
                    "text": _sentence(rng),
                    "occurred_at": _iso(START + timedelta(minutes=7 * n)),
                    "value": rng.randrange(1000),
                },
            )
        )


def generate(bulk_records: int = 0) -> Dataset:
    rng = random.Random(7)  # noqa: S311 - deterministic sample data, not secrets
    dataset = Dataset()
    _mail(dataset, rng)
    _chat(dataset, rng)
    _code(dataset, rng)
    _music(dataset, rng)
    _pay(dataset)
    if bulk_records:
        _bulk(dataset, bulk_records)
    return dataset
