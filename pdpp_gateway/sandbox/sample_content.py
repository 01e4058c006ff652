"""Deterministic material the sample data is made of: timestamps, prose, tiny files.

Contract: every function is pure given its ``random.Random``: the same generator state
gives the same text and times, so ``data.generate`` is reproducible. Times fall within
``START`` + ``SPAN_DAYS`` (2025-05 .. 2026-10) and are written as the RS writes them
(``iso``); ``png`` and ``pdf`` build small valid files, and ``blob_ref`` the field that
points at one (id, media type, size, SHA-256).
"""

from __future__ import annotations

import hashlib
import random
import struct
import zlib
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from pdpp_gateway.sandbox.dataset import Blob

START: Final = datetime(2025, 5, 1, tzinfo=UTC)
SPAN_DAYS: Final = 548

WORDS: Final = [
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


def iso(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%S.000Z")


def random_moment(rng: random.Random) -> datetime:
    return START + timedelta(
        days=rng.randrange(SPAN_DAYS), hours=rng.randrange(24), minutes=rng.randrange(60)
    )


def sentence(rng: random.Random) -> str:
    words = [rng.choice(WORDS) for _ in range(rng.randrange(8, 16))]
    return " ".join(words).capitalize() + "."


def prose(rng: random.Random, chars: int) -> str:
    parts: list[str] = []
    size = 0
    while size < chars:
        paragraph = " ".join(sentence(rng) for _ in range(rng.randrange(3, 7)))
        parts.append(paragraph)
        size += len(paragraph) + 2
    return "\n\n".join(parts)


def with_decoys(text: str, decoys: tuple[str, ...], spacing: int = 1500) -> str:
    """``text`` with each decoy as its own paragraph, at paragraph breaks ``spacing`` apart."""
    position = 0
    for decoy in decoys:
        cut = text.find("\n\n", position + spacing)
        if cut < 0:
            break
        text = f"{text[:cut]}\n\n{decoy}{text[cut:]}"
        position = cut + len(decoy) + 2
    return text


def buried(rng: random.Random, size: int, opening: str, fact: str, decoys: tuple[str, ...]) -> str:
    """A long message of about ``size`` characters: ``opening`` (what its sender writes first),
    then filler with ``decoys`` early in it and ``fact`` half-way through."""
    first = with_decoys(prose(rng, size // 2), decoys)
    return f"{opening}\n\n{first}\n\n{fact}\n\n{prose(rng, size // 2)}"


def png(width: int = 4, height: int = 4) -> bytes:
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


def pdf(text: str) -> bytes:
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


def blob_ref(blob: Blob) -> dict[str, Any]:
    return {
        "blob_id": blob.blob_id,
        "mime_type": blob.mime_type,
        "size_bytes": len(blob.content),
        "sha256": hashlib.sha256(blob.content).hexdigest(),
    }
