"""What the sandbox RS declares: connectors, connections and stream manifests.

Contract: each ``StreamManifest`` declares its fields (type and role), primary key,
cursor field, lexical/semantic search fields, range-filterable and exact-filterable
fields, aggregations and expand relations, exactly the declarations the PDPP schema
document advertises. Fields with role ``metadata`` are searchable, but a match on them
is not *proven* evidence: hits list them in ``matched_fields`` without an excerpt.
The data in ``data.py`` follows these manifests.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final


@dataclass(frozen=True, slots=True)
class Field:
    type: str  # string | integer | number | boolean | date-time | array | object
    role: str | None = None  # "text" (proven evidence), "metadata", "title", "blob"


@dataclass(frozen=True, slots=True)
class Relation:
    """An expandable relation. ``has_many`` children come as a bounded list
    (``default_limit``/``max_limit``); a ``has_one`` child as one record or null, with no limits."""

    name: str
    target_stream: str
    foreign_key: str  # field on the target that points at this stream's primary key field
    parent_key: str  # field on this stream matched against foreign_key
    default_limit: int = 10
    max_limit: int = 50
    cardinality: str = "has_many"

    def limits(self) -> dict[str, int]:
        if self.cardinality == "has_one":
            return {}
        return {"default_limit": self.default_limit, "max_limit": self.max_limit}


@dataclass(frozen=True, slots=True)
class StreamManifest:
    name: str
    fields: dict[str, Field]
    primary_key: str
    cursor_field: str
    semantics: str = "append_only"
    lexical: tuple[str, ...] = ()
    semantic: tuple[str, ...] = ()
    exact: tuple[str, ...] = ()
    ranges: tuple[str, ...] = ()
    sum: tuple[str, ...] = ()
    min_max: tuple[str, ...] = ()
    count_distinct: tuple[str, ...] = ()
    group_by: tuple[str, ...] = ()
    group_by_time: tuple[str, ...] = ()
    relations: tuple[Relation, ...] = ()

    def query_declaration(self) -> dict[str, object]:
        return {
            "range_filters": {name: ["gte", "gt", "lte", "lt"] for name in self.ranges},
            "exact_filters": list(self.exact),
            "search": {"lexical_fields": list(self.lexical), "semantic_fields": list(self.semantic)},
            "aggregations": {
                "count": True,
                "sum": list(self.sum),
                "min": list(self.min_max),
                "max": list(self.min_max),
                "count_distinct": list(self.count_distinct),
                "group_by": list(self.group_by),
                "group_by_time": list(self.group_by_time),
            },
            "expand": [{"name": r.name, **r.limits()} for r in self.relations],
        }


@dataclass(frozen=True, slots=True)
class Connection:
    connection_id: str
    display_name: str | None


@dataclass(frozen=True, slots=True)
class Connector:
    key: str
    source_id: str
    connections: tuple[Connection, ...]
    streams: tuple[StreamManifest, ...]
    provider_native: bool = False

    def stream(self, name: str) -> StreamManifest | None:
        return next((s for s in self.streams if s.name == name), None)


STR, INT, NUM, BOOL, TIME, ARR, OBJ = "string", "integer", "number", "boolean", "date-time", "array", "object"

MAIL_MESSAGES: Final = StreamManifest(
    name="messages",
    fields={
        "id": Field(STR),
        "thread_id": Field(STR),
        "subject": Field(STR, "title"),
        "from_name": Field(STR, "metadata"),
        "from_email": Field(STR, "metadata"),
        "to": Field(ARR),
        "labels": Field(ARR),
        "snippet": Field(STR, "text"),
        "received_at": Field(TIME),
        "size_bytes": Field(INT),
        "is_seen": Field(BOOL),
        "has_attachments": Field(BOOL),
    },
    primary_key="id",
    cursor_field="received_at",
    lexical=("subject", "snippet", "from_name", "from_email"),
    semantic=("subject", "snippet"),
    exact=("id", "thread_id", "from_email", "is_seen", "has_attachments"),
    ranges=("received_at", "size_bytes"),
    sum=("size_bytes",),
    min_max=("received_at", "size_bytes"),
    count_distinct=("from_email", "thread_id"),
    group_by=("from_email", "is_seen", "has_attachments"),
    group_by_time=("received_at",),
    # As the reference declares them: one body per message, a bounded list of attachments.
    relations=(
        Relation("message_bodies", "message_bodies", "message_id", "id", cardinality="has_one"),
        Relation("attachments", "attachments", "message_id", "id"),
    ),
)
MAIL_THREADS: Final = StreamManifest(
    name="threads",
    fields={
        "id": Field(STR),
        "subject": Field(STR, "title"),
        "message_count": Field(INT),
        "last_message_date": Field(TIME),
    },
    primary_key="id",
    cursor_field="last_message_date",
    semantics="mutable_state",
    lexical=("subject",),
    exact=("id",),
    ranges=("last_message_date", "message_count"),
    sum=("message_count",),
    min_max=("message_count", "last_message_date"),
    group_by_time=("last_message_date",),
)
MAIL_BODIES: Final = StreamManifest(
    name="message_bodies",
    fields={
        "id": Field(STR),
        "message_id": Field(STR),
        "body_text": Field(STR, "text"),
        "body_text_bytes": Field(INT),
        "message_received_at": Field(TIME),
    },
    primary_key="id",
    cursor_field="message_received_at",
    lexical=("body_text",),
    semantic=("body_text",),
    exact=("message_id",),
    ranges=("message_received_at", "body_text_bytes"),
    sum=("body_text_bytes",),
    min_max=("body_text_bytes",),
    group_by_time=("message_received_at",),
)
MAIL_ATTACHMENTS: Final = StreamManifest(
    name="attachments",
    fields={
        "id": Field(STR),
        "message_id": Field(STR),
        "filename": Field(STR, "title"),
        "content_type": Field(STR),
        "size_bytes": Field(INT),
        "blob_ref": Field(OBJ, "blob"),
        "message_received_at": Field(TIME),
    },
    primary_key="id",
    cursor_field="message_received_at",
    lexical=("filename",),
    exact=("message_id", "content_type"),
    ranges=("size_bytes", "message_received_at"),
    sum=("size_bytes",),
    min_max=("size_bytes",),
    group_by=("content_type",),
)
CHAT_CHANNELS: Final = StreamManifest(
    name="channels",
    fields={
        "id": Field(STR),
        "name": Field(STR, "title"),
        "topic": Field(STR, "text"),
        "member_count": Field(INT),
        "created_at": Field(TIME),
    },
    primary_key="id",
    cursor_field="created_at",
    semantics="mutable_state",
    lexical=("name", "topic"),
    exact=("id", "name"),
    ranges=("member_count",),
    sum=("member_count",),
    min_max=("member_count",),
)
CHAT_MESSAGES: Final = StreamManifest(
    name="messages",
    fields={
        "id": Field(STR),
        "channel_id": Field(STR),
        "user_name": Field(STR, "metadata"),
        "text": Field(STR, "text"),
        "sent_at": Field(TIME),
        "reaction_count": Field(INT),
        # a thread reply's parent message id (the reference names the parent's ts; these
        # samples have no ts), and a parent's count of replies
        "thread_ts": Field(STR),
        "reply_count": Field(INT),
    },
    primary_key="id",
    cursor_field="sent_at",
    lexical=("text", "user_name"),
    semantic=("text",),
    exact=("channel_id", "user_name", "thread_ts"),
    ranges=("sent_at", "reaction_count"),
    sum=("reaction_count",),
    min_max=("sent_at", "reaction_count"),
    count_distinct=("user_name", "channel_id"),
    group_by=("channel_id", "user_name"),
    group_by_time=("sent_at",),
)
CODE_REPOSITORIES: Final = StreamManifest(
    name="repositories",
    fields={
        "id": Field(STR),
        "full_name": Field(STR, "title"),
        "description": Field(STR, "text"),
        "language": Field(STR),
        "stars": Field(INT),
        "created_at": Field(TIME),
    },
    primary_key="id",
    cursor_field="created_at",
    semantics="mutable_state",
    lexical=("full_name", "description"),
    exact=("language",),
    ranges=("stars", "created_at"),
    sum=("stars",),
    min_max=("stars",),
    group_by=("language",),
    count_distinct=("language",),
)
CODE_ISSUES: Final = StreamManifest(
    name="issues",
    fields={
        "id": Field(STR),
        "repository": Field(STR),
        "number": Field(INT),
        "title": Field(STR, "title"),
        "body": Field(STR, "text"),
        "state": Field(STR),
        "user_login": Field(STR, "metadata"),
        "comments": Field(INT),
        "created_at": Field(TIME),
    },
    primary_key="id",
    cursor_field="created_at",
    lexical=("title", "body"),
    semantic=("title", "body"),
    exact=("repository", "state"),
    ranges=("created_at", "comments"),
    sum=("comments",),
    min_max=("created_at", "comments"),
    group_by=("state", "repository"),
    group_by_time=("created_at",),
    count_distinct=("repository",),
    relations=(Relation("comments", "issue_comments", "issue_id", "id"),),
)
# A sandbox extension: the reference's GitHub connector keeps only a count of an issue's
# comments; here each comment is a record, as a connector that syncs the thread would keep it.
CODE_ISSUE_COMMENTS: Final = StreamManifest(
    name="issue_comments",
    fields={
        "id": Field(STR),
        "issue_id": Field(STR),
        "repository": Field(STR),
        "issue_number": Field(INT),
        "user_login": Field(STR, "metadata"),
        "body": Field(STR, "text"),
        "created_at": Field(TIME),
    },
    primary_key="id",
    cursor_field="created_at",
    lexical=("body", "user_login"),
    semantic=("body",),
    exact=("issue_id", "repository", "user_login"),
    ranges=("created_at",),
    min_max=("created_at",),
    count_distinct=("user_login", "issue_id"),
    group_by=("user_login", "repository"),
    group_by_time=("created_at",),
)
ASSISTANT_CONVERSATIONS: Final = StreamManifest(
    name="conversations",
    fields={
        "id": Field(STR),
        "title": Field(STR, "title"),
        "create_time": Field(TIME),
        "update_time": Field(TIME),
        "message_count_on_current_branch": Field(INT),
    },
    primary_key="id",
    cursor_field="update_time",
    semantics="mutable_state",
    lexical=("title",),
    semantic=("title",),
    exact=("id",),
    ranges=("create_time", "update_time", "message_count_on_current_branch"),
    min_max=("create_time", "update_time"),
    group_by_time=("create_time", "update_time"),
    # a sandbox extension: the reference declares no expand here; its messages point back
    # at their conversation by conversation_id all the same
    relations=(Relation("messages", "messages", "conversation_id", "id"),),
)
ASSISTANT_MESSAGES: Final = StreamManifest(
    name="messages",
    fields={
        "id": Field(STR),
        "conversation_id": Field(STR),
        "parent_id": Field(STR),
        "role": Field(STR, "metadata"),
        "content": Field(STR, "text"),
        "create_time": Field(TIME),
    },
    primary_key="id",
    cursor_field="create_time",
    lexical=("content",),
    semantic=("content",),
    exact=("conversation_id", "role"),
    ranges=("create_time",),
    min_max=("create_time",),
    count_distinct=("conversation_id",),
    group_by=("role", "conversation_id"),
    group_by_time=("create_time",),
)
MUSIC_ARTISTS: Final = StreamManifest(
    name="top_artists",
    fields={
        "id": Field(STR),
        "name": Field(STR, "title"),
        "genres": Field(ARR),
        "popularity": Field(INT),
        "source_updated_at": Field(TIME),
    },
    primary_key="id",
    cursor_field="source_updated_at",
    semantics="mutable_state",
    lexical=("name",),
    exact=("id",),
    ranges=("popularity", "source_updated_at"),
    min_max=("popularity",),
)
MUSIC_SAVED: Final = StreamManifest(
    name="saved_tracks",
    fields={
        "id": Field(STR),
        "track_id": Field(STR),
        "name": Field(STR, "title"),
        "artist": Field(STR, "metadata"),
        "added_at": Field(TIME),
        "cover_art": Field(OBJ, "blob"),
    },
    primary_key="id",
    cursor_field="added_at",
    lexical=("name", "artist"),
    exact=("artist", "track_id"),
    ranges=("added_at",),
    group_by=("artist",),
    group_by_time=("added_at",),
    count_distinct=("artist",),
    relations=(Relation("recently_played", "recently_played", "track_id", "track_id"),),
)
MUSIC_PLAYED: Final = StreamManifest(
    name="recently_played",
    fields={
        "id": Field(STR),
        "track_id": Field(STR),
        "track_name": Field(STR, "title"),
        "artist": Field(STR, "metadata"),
        "played_at": Field(TIME),
        "ms_played": Field(INT),
    },
    primary_key="id",
    cursor_field="played_at",
    lexical=("track_name", "artist"),
    exact=("track_id", "artist"),
    ranges=("played_at", "ms_played"),
    sum=("ms_played",),
    min_max=("played_at", "ms_played"),
    count_distinct=("track_id", "artist"),
    group_by=("artist",),
    group_by_time=("played_at",),
)
HR_PAY: Final = StreamManifest(
    name="pay_statements",
    fields={
        "statement_id": Field(STR),
        "issued_at": Field(TIME),
        "pay_period_end": Field(TIME),
        "gross_amount": Field(NUM),
        "net_amount": Field(NUM),
        "currency": Field(STR),
        "employer": Field(STR, "metadata"),
    },
    primary_key="statement_id",
    cursor_field="issued_at",
    lexical=("employer",),
    exact=("currency",),
    ranges=("issued_at", "gross_amount", "net_amount"),
    sum=("gross_amount", "net_amount"),
    min_max=("gross_amount", "net_amount", "issued_at"),
    group_by=("currency",),
    group_by_time=("issued_at",),
)
BULK_EVENTS: Final = StreamManifest(
    name="events",
    fields={
        "id": Field(STR),
        "kind": Field(STR),
        "text": Field(STR, "text"),
        "occurred_at": Field(TIME),
        "value": Field(INT),
    },
    primary_key="id",
    cursor_field="occurred_at",
    lexical=("text",),
    exact=("kind",),
    ranges=("occurred_at", "value"),
    sum=("value",),
    min_max=("value",),
    group_by=("kind",),
    group_by_time=("occurred_at",),
)

MAIL_WORK: Final = Connection("cin_mail_work", "Work")
MAIL_PERSONAL: Final = Connection("cin_mail_personal", "Personal")
SLACK: Final = Connection("cin_slack_acme", "Acme Slack")
GITHUB: Final = Connection("cin_github", "octocat")
SPOTIFY: Final = Connection("cin_spotify", "Spotify")
HR: Final = Connection("cin_northstar", "Northstar HR")
BULK: Final = Connection("cin_bulk", "Bulk events")
# The corpus nobody tuned to (``corpus``): Sam's Home mail, the Orbit Labs Slack and GitHub, ChatGPT.
MAIL_HOME: Final = Connection("cin_mail_home", "Home")
SLACK_ORBIT: Final = Connection("cin_slack_orbit", "Orbit Labs Slack")
GITHUB_ORBIT: Final = Connection("cin_github_orbit", "orbit-labs")
CHATGPT: Final = Connection("cin_chatgpt", "ChatGPT")

_REGISTRY = "https://registry.pdpp.dev/connectors/"

CONNECTORS: Final[tuple[Connector, ...]] = (
    Connector(
        "gmail",
        _REGISTRY + "gmail",
        (MAIL_WORK, MAIL_PERSONAL, MAIL_HOME),
        (MAIL_MESSAGES, MAIL_THREADS, MAIL_BODIES, MAIL_ATTACHMENTS),
    ),
    Connector("slack", _REGISTRY + "slack", (SLACK, SLACK_ORBIT), (CHAT_CHANNELS, CHAT_MESSAGES)),
    Connector(
        "github",
        _REGISTRY + "github",
        (GITHUB, GITHUB_ORBIT),
        (CODE_REPOSITORIES, CODE_ISSUES, CODE_ISSUE_COMMENTS),
    ),
    Connector("spotify", _REGISTRY + "spotify", (SPOTIFY,), (MUSIC_ARTISTS, MUSIC_SAVED, MUSIC_PLAYED)),
    Connector("northstar-hr", "https://northstar.example/pdpp", (HR,), (HR_PAY,), provider_native=True),
    Connector("chatgpt", _REGISTRY + "chatgpt", (CHATGPT,), (ASSISTANT_CONVERSATIONS, ASSISTANT_MESSAGES)),
)
BULK_CONNECTOR: Final = Connector("bulk", _REGISTRY + "bulk", (BULK,), (BULK_EVENTS,))


@dataclass(frozen=True, slots=True)
class Catalog:
    """The connectors one sandbox serves (the bulk connector only when bulk data is loaded)."""

    connectors: tuple[Connector, ...] = field(default=CONNECTORS)

    def connector_of(self, connection_id: str) -> Connector | None:
        return next(
            (c for c in self.connectors if any(x.connection_id == connection_id for x in c.connections)), None
        )

    def connection(self, connection_id: str) -> Connection | None:
        for connector in self.connectors:
            for connection in connector.connections:
                if connection.connection_id == connection_id:
                    return connection
        return None
