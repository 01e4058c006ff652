"""A second person's-life corpus, written as text files: mail threads, issue threads, chat, assistant chats.

Contract: ``add_corpus(dataset)`` appends, after every other sample row (so those stay as they
were), the records of the JSON files in ``corpus/``: Sam's Home mail (``home_mail.json``: each
message and its body, threads counted from their messages), the Orbit Labs Slack workspace
(``orbit_slack.json``: channels, messages, a reply's ``thread_ts`` naming its parent), the
orbit-labs GitHub organisation (``orbit_github.json``: repositories, issues, and each issue's
comments as records of ``issue_comments``) and a ChatGPT history (``chatgpt.json``:
conversations and their messages, each turn a record). The files were written as a person's
data reads, by a writer who saw none of the gateway's search code; the questions over them
(``benchmarks/questions_fresh.json``) are the measurement nobody tuned to. Field shapes follow
the manifests (``manifests``); a file that is absent adds nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from importlib import resources
from typing import Any, Final

from pdpp_gateway.sandbox.dataset import Dataset, Row
from pdpp_gateway.sandbox.manifests import CHATGPT, GITHUB_ORBIT, MAIL_HOME, SLACK_ORBIT

ME: Final = "sam.carvalho@home.test"
SNIPPET_CHARS: Final = 90  # a mail message's snippet: its body's opening, as the mail samples have it


def add_corpus(dataset: Dataset) -> None:
    """Every corpus file's records appended to ``dataset`` (see the module contract)."""
    _mail(dataset, _load("home_mail.json"))
    _slack(dataset, _load("orbit_slack.json"))
    _github(dataset, _load("orbit_github.json"))
    _chatgpt(dataset, _load("chatgpt.json"))


def _load(name: str) -> Mapping[str, Any]:
    path = resources.files("pdpp_gateway.sandbox").joinpath("corpus", name)
    if not path.is_file():
        return {}
    loaded: Mapping[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return loaded


def _mail(dataset: Dataset, source: Mapping[str, Any]) -> None:
    cid = MAIL_HOME.connection_id
    threads: dict[str, dict[str, Any]] = {}
    for message in source.get("messages", ()):
        body = str(message["body"])
        received = str(message["received_at"])
        record = {
            "id": message["id"],
            "thread_id": message["thread_id"],
            "subject": message["subject"],
            "from_name": message["from_name"],
            "from_email": message["from_email"],
            "to": list(message.get("to") or [ME]),
            "labels": list(message.get("labels") or ["INBOX"]),
            "snippet": body[:SNIPPET_CHARS],
            "received_at": received,
            "size_bytes": len(body.encode()) + 800,
            "is_seen": True,
            "has_attachments": False,
        }
        body_id = "hb_" + str(message["id"]).removeprefix("hm_")
        dataset.rows.append(Row("gmail", cid, "messages", record["id"], record))
        dataset.rows.append(
            Row(
                "gmail",
                cid,
                "message_bodies",
                body_id,
                {
                    "id": body_id,
                    "message_id": record["id"],
                    "body_text": body,
                    "body_text_bytes": len(body.encode()),
                    "message_received_at": received,
                },
            )
        )
        thread = threads.setdefault(
            record["thread_id"],
            {
                "id": record["thread_id"],
                "subject": record["subject"],
                "message_count": 0,
                "last_message_date": received,
            },
        )
        thread["message_count"] += 1
        thread["last_message_date"] = max(thread["last_message_date"], received)
    for thread in threads.values():
        dataset.rows.append(Row("gmail", cid, "threads", thread["id"], thread))


def _slack(dataset: Dataset, source: Mapping[str, Any]) -> None:
    cid = SLACK_ORBIT.connection_id
    channels = {}
    for n, channel in enumerate(source.get("channels", ())):
        channels[channel["name"]] = channel["id"]
        record = {
            "id": channel["id"],
            "name": channel["name"],
            "topic": channel.get("topic") or "",
            "member_count": 30 - 3 * n,
            "created_at": "2025-01-15T09:00:00.000Z",
        }
        dataset.rows.append(Row("slack", cid, "channels", record["id"], record))
    replies: dict[str, int] = {}
    for message in source.get("messages", ()):
        if message.get("thread_of"):
            replies[message["thread_of"]] = replies.get(message["thread_of"], 0) + 1
    for message in source.get("messages", ()):
        record = {
            "id": message["id"],
            "channel_id": channels[message["channel"]],
            "user_name": message["user_name"],
            "text": message["text"],
            "sent_at": message["sent_at"],
            "reaction_count": 0,
            "thread_ts": message.get("thread_of") or None,
            "reply_count": replies.get(message["id"], 0),
        }
        dataset.rows.append(Row("slack", cid, "messages", record["id"], record))


def _github(dataset: Dataset, source: Mapping[str, Any]) -> None:
    cid = GITHUB_ORBIT.connection_id
    for repository in source.get("repositories", ()):
        record = {
            "id": repository["id"],
            "full_name": repository["full_name"],
            "description": repository.get("description") or "",
            "language": repository.get("language") or "",
            "stars": 0,
            "created_at": repository.get("created_at") or "2025-01-15T09:00:00.000Z",
        }
        dataset.rows.append(Row("github", cid, "repositories", record["id"], record))
    for issue in source.get("issues", ()):
        comments = list(issue.get("comments") or ())
        record = {
            "id": issue["id"],
            "repository": issue["repository"],
            "number": issue["number"],
            "title": issue["title"],
            "body": issue["body"],
            "state": issue["state"],
            "user_login": issue.get("author"),
            "comments": len(comments),
            "created_at": issue["created_at"],
        }
        dataset.rows.append(Row("github", cid, "issues", record["id"], record))
        for comment in comments:
            dataset.rows.append(
                Row(
                    "github",
                    cid,
                    "issue_comments",
                    comment["id"],
                    {
                        "id": comment["id"],
                        "issue_id": issue["id"],
                        "repository": issue["repository"],
                        "issue_number": issue["number"],
                        "user_login": comment.get("author"),
                        "body": comment["body"],
                        "created_at": comment["created_at"],
                    },
                )
            )


def _chatgpt(dataset: Dataset, source: Mapping[str, Any]) -> None:
    cid = CHATGPT.connection_id
    for conversation in source.get("conversations", ()):
        turns = list(conversation.get("messages") or ())
        created = str(conversation["create_time"])
        record = {
            "id": conversation["id"],
            "title": conversation["title"],
            "create_time": created,
            "update_time": max([created, *(str(turn["create_time"]) for turn in turns)]),
            "message_count_on_current_branch": len(turns),
        }
        dataset.rows.append(Row("chatgpt", cid, "conversations", record["id"], record))
        parent = None
        for turn in turns:
            message = {
                "id": turn["id"],
                "conversation_id": conversation["id"],
                "parent_id": parent,
                "role": turn["role"],
                "content": turn["content"],
                "create_time": turn["create_time"],
            }
            parent = turn["id"]
            dataset.rows.append(Row("chatgpt", cid, "messages", message["id"], message))
