"""A person's facts, each buried deep in one long text behind decoys: what a question must reach.

Contract: ``add_facts(dataset)`` appends, after every other sample row and from its own seeded
generator (so the rows before it stay as they were), eight more long Work mail messages with
their bodies (``MAIL_FACTS``: 20-30k characters that open as their sender would, on the
subject and without the fact or its answer, then filler with the fact 10k or more into it and
two decoys earlier that carry the fact's key words without the answer), three Acme Slack
messages with a fact each (``CHAT_FACTS``), and buries one fact in each of two long GitHub
issue bodies (``ISSUE_FACTS``) the same way, each body then opening on its issue's subject.
Every fact is one sentence that appears nowhere else. The openings (``sample_openings``) are
what a meaning-based search sees of these bodies (it reads a field's first 2,048 characters,
as the reference RS does); the facts lie far past them.
"""

from __future__ import annotations

import random
from datetime import timedelta
from typing import Final, NamedTuple

from pdpp_gateway.sandbox.dataset import Dataset, Row
from pdpp_gateway.sandbox.manifests import SLACK
from pdpp_gateway.sandbox.sample_content import START, buried, iso, random_moment, with_decoys
from pdpp_gateway.sandbox.sample_mail import add_long_message
from pdpp_gateway.sandbox.sample_openings import OPENINGS


class Buried(NamedTuple):
    key: str  # the body record id is body_<key>, its message msg_long_<key>
    subject: str
    sender: tuple[str, str]
    size: int
    fact: str
    decoys: tuple[str, str]
    opening: str  # what the sender writes first, on the subject, without the fact or its answer


MAIL_FACTS: Final = (
    Buried(
        "spare_key",
        "Apartment handover notes",
        ("Landlord Office", "rent@lisbonhomes.test"),
        24_000,
        "The spare key for the apartment is hidden in the blue flowerpot by the back door.",
        ("Keys for the mailbox are kept by the concierge.", "The apartment handover is on Friday."),
        OPENINGS["body_spare_key"],
    ),
    Buried(
        "office_wifi",
        "Welcome to the new office",
        ("Ana Ribeiro", "ana@acme.test"),
        24_000,
        "The office wifi password is harbour-lights-42 on the network Acme-Guest.",
        ("The wifi in the meeting rooms is slow in the afternoon.", "Password resets are handled by IT."),
        OPENINGS["body_office_wifi"],
    ),
    Buried(
        "dentist",
        "Appointment reminder",
        ("Clinica Sorriso", "agenda@sorriso.test"),
        22_000,
        "Your dentist appointment with Dr. Almeida is on 14 April at 09:30.",
        ("Appointment changes need 24 hours notice.", "Dr. Almeida is away in August."),
        OPENINGS["body_dentist"],
    ),
    Buried(
        "car_service",
        "Your car service report",
        ("Garage Tejo", "oficina@tejo.test"),
        30_000,
        "The mechanic replaced the front brake pads; the repair cost 340 EUR in total.",
        ("Brake fluid is checked at every second service.", "The mechanic recommends new tyres next year."),
        OPENINGS["body_car_service"],
    ),
    Buried(
        "insurance",
        "Your travel insurance policy",
        ("Segura Travel", "policy@segura.test"),
        22_000,
        "Your travel insurance policy number is TI-88213-PT and covers medical costs up to 50,000 EUR.",
        ("Policy documents are attached as a PDF.", "Travel insurance claims take ten working days."),
        OPENINGS["body_insurance"],
    ),
    Buried(
        "pension",
        "Annual pension statement",
        ("Northstar Pensions", "statements@northstar.test"),
        26_000,
        "Your pension pot was worth 48,200 EUR on 31 December.",
        ("Pension contributions rise in April.", "This statement covers the last tax year."),
        OPENINGS["body_pension"],
    ),
    Buried(
        "school_trip",
        "School trip consent form",
        ("Escola Azul", "office@escola-azul.test"),
        20_000,
        "The school trip to Sintra costs 35 EUR and the coach leaves at 08:15 on 2 May.",
        ("Trip consent forms are due next week.", "Sintra is about 30 km from Lisbon."),
        OPENINGS["body_school_trip"],
    ),
    Buried(
        "gym",
        "Membership renewal",
        ("FitLab", "members@fitlab.test"),
        21_000,
        "Your gym membership renews on 1 June at 39 EUR a month.",
        ("Membership cards can be replaced at reception.", "The gym is closed on public holidays."),
        OPENINGS["body_gym"],
    ),
)
CHAT_FACTS: Final = (
    "Team lunch on Friday is at Tasca do Chico, table booked for 13:00.",
    "The new VPN server address is vpn2.acme.test, the old one goes away in March.",
    "Parking permits for the garage are with Erin, ask her before Thursday.",
)
# (issue record id, fact, decoys, opening): the fact and decoys buried in the issue's existing
# long body, which then opens on its subject (a real issue says first what it is about).
ISSUE_FACTS: Final = (
    (
        "I0009",
        "The crash only happens with the pt_PT locale; the workaround is to export LC_ALL=C.",
        ("Locale handling was rewritten last year.", "Crash reports are uploaded every night."),
        OPENINGS["I0009"],
    ),
    (
        "I0018",
        "The release is blocked until the signing key is rotated on 12 May.",
        ("Release notes live in the wiki.", "Signing runs in CI for every tag."),
        OPENINGS["I0018"],
    ),
)


def add_facts(dataset: Dataset) -> None:
    rng = random.Random(31)  # noqa: S311 - deterministic sample data, not secrets
    for item in MAIL_FACTS:
        moment = random_moment(rng)
        text = buried(rng, item.size, item.opening, item.fact, item.decoys)
        add_long_message(
            dataset, item.key, (item.subject, *item.sender), text, moment, labels=["INBOX"], seen=True
        )
    for n, fact in enumerate(CHAT_FACTS):
        record_id = f"M9{n:04d}"
        dataset.rows.append(
            Row(
                "slack",
                SLACK.connection_id,
                "messages",
                record_id,
                {
                    "id": record_id,
                    "channel_id": "C0000",
                    "user_name": ("dev", "bob", "carla")[n],
                    "text": fact,
                    "sent_at": iso(START + timedelta(days=480 + 3 * n, hours=10)),
                    "reaction_count": n,
                },
            )
        )
    issues = {row.record_id: row for row in dataset.rows if row.stream == "issues"}
    for record_id, fact, decoys, opening in ISSUE_FACTS:
        data = issues[record_id].data
        body = with_decoys(str(data["body"]), decoys)
        middle = body.find("\n\n", len(body) // 2)
        data["body"] = f"{opening}\n\n{body[:middle]}\n\n{fact}{body[middle:]}"
