"""The sample mail: two gmail connections, their threads, long bodies and attachments.

Contract: ``add_mail(dataset, rng)`` appends the ``messages``, ``message_bodies``,
``threads`` and ``attachments`` rows of the "Work" and "Personal" connections, and the
receipt PNG and lease PDF blobs, drawing from ``rng`` in a fixed order. It plants on
purpose what the gateway must cope with:

- one record id (``msg_shared_0001``) in both connections (ambiguous without
  ``connection_id``);
- three long bodies (tens of KB) that open on their subject as a sender writes
  (``sample_openings.OPENINGS``), with a fact buried deep inside (``BURIED_FACTS``) and,
  earlier, decoys carrying the fact's key words without the answer (``DECOYS``);
- two deleted messages (tombstones for ``changes_since``).
"""

from __future__ import annotations

import random
from datetime import datetime, timedelta
from typing import Any, Final

from pdpp_gateway.sandbox.dataset import Blob, Dataset, Row
from pdpp_gateway.sandbox.manifests import MAIL_PERSONAL, MAIL_WORK
from pdpp_gateway.sandbox.sample_content import (
    START,
    blob_ref,
    buried,
    iso,
    pdf,
    png,
    prose,
    random_moment,
)
from pdpp_gateway.sandbox.sample_openings import OPENINGS

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

# Messages that carry the attachments rows of ``add_mail`` (their ``has_attachments`` flag agrees).
_ATTACHED: Final = frozenset({"msg_work_0003"})

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


def add_mail(dataset: Dataset, rng: random.Random) -> None:
    receipt = Blob("blob_receipt_png", "image/png", png())
    lease = Blob("blob_lease_pdf", "application/pdf", pdf("Lisbon apartment lease 2026"))
    dataset.blobs.update({receipt.blob_id: receipt, lease.blob_id: lease})
    for connection, count in ((MAIL_WORK, 140), (MAIL_PERSONAL, 60)):
        cid = connection.connection_id
        threads: dict[str, dict[str, Any]] = {}
        for n in range(count):
            record_id = f"msg_{cid[9:]}_{n:04d}"
            sender, email = rng.choice(_PEOPLE)
            subject = rng.choice(_SUBJECTS).format(n=2026000 + n)
            moment = random_moment(rng)
            thread_id = f"thr_{cid[9:]}_{n // 3:04d}"
            body = prose(rng, rng.choice((600, 1200, 2500)))
            _add_message(dataset, cid, record_id, thread_id, subject, sender, email, moment, body, n)
            thread = threads.setdefault(
                thread_id,
                {"id": thread_id, "subject": subject, "message_count": 0, "last_message_date": iso(moment)},
            )
            thread["message_count"] += 1
            thread["last_message_date"] = max(thread["last_message_date"], iso(moment))
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
        moment = random_moment(rng)
        text = buried(rng, size, OPENINGS[record_id], BURIED_FACTS[record_id], DECOYS[record_id])
        add_long_message(
            dataset,
            record_id[5:],
            (subject, sender, email),
            text,
            moment,
            labels=["INBOX", "IMPORTANT"],
            seen=False,
            attached=record_id == "body_lisbon_lease",
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
                    "blob_ref": blob_ref(blob),
                    "message_received_at": iso(START + timedelta(days=30 * (n + 1))),
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
                deleted_at=iso(START + timedelta(days=400 + n)),
            )
        )


def add_long_message(
    dataset: Dataset,
    key: str,
    header: tuple[str, str, str],
    text: str,
    moment: datetime,
    *,
    labels: list[str],
    seen: bool,
    attached: bool = False,
) -> None:
    """A Work mail message ``msg_long_<key>`` (``header``: subject, sender name, sender email)
    and its body ``body_<key>`` holding ``text``, in a thread of its own."""
    work = MAIL_WORK.connection_id
    subject, sender, email = header
    message_id = f"msg_long_{key}"
    message = {
        "id": message_id,
        "thread_id": f"thr_long_{key}",
        "subject": subject,
        "from_name": sender,
        "from_email": email,
        "to": ["me@example.com"],
        "labels": labels,
        "snippet": text[:90],
        "received_at": iso(moment),
        "size_bytes": len(text) + 900,
        "is_seen": seen,
        "has_attachments": attached,
    }
    body = {
        "id": f"body_{key}",
        "message_id": message_id,
        "body_text": text,
        "body_text_bytes": len(text.encode()),
        "message_received_at": iso(moment),
    }
    dataset.rows.append(Row("gmail", work, "messages", message_id, message))
    dataset.rows.append(Row("gmail", work, "message_bodies", f"body_{key}", body))


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
                "received_at": iso(moment),
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
                "message_received_at": iso(moment),
            },
        )
    )
