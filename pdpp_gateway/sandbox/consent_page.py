"""The sandbox authorization server's HTML: the consent page and the error page.

Contract: pure functions returning a complete HTML document, every interpolated value
escaped. ``consent_page`` shows which app asks (its registered name and where it will be
sent back), one checkbox per (connector, stream) offered, all checked, read-only access
stated, and two buttons: Approve and Deny. The form posts back to ``action`` with the
pending request id and the CSRF token as hidden fields. ``error_page`` is what a person
sees when the request cannot be sent back to the app (unknown client, unregistered
redirect URI): RFC 6749 §4.1.2.1 forbids redirecting then. Both fit a phone's width.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from typing import Final
from urllib.parse import urlsplit

_STYLE: Final = """
*{box-sizing:border-box}
body{font:16px/1.5 system-ui,sans-serif;max-width:36rem;margin:1.5rem auto;padding:0 1rem;color:#1b2430}
h1{font-size:1.4rem;margin:.2rem 0 1rem}
.app{background:#eef4fb;border:1px solid #c9d9ec;border-radius:10px;padding:.8rem 1rem;overflow-wrap:anywhere}
fieldset{border:1px solid #d5dbe3;border-radius:10px;margin:1rem 0;padding:.6rem 1rem}
legend{font-weight:600;padding:0 .3rem;overflow-wrap:anywhere}
label{display:block;padding:.25rem 0}
.note{color:#4a5565;font-size:.92rem}
.actions{display:flex;gap:.8rem;flex-wrap:wrap;margin-top:1.2rem}
button{font:inherit;padding:.6rem 1.4rem;border-radius:8px;border:1px solid #1f3a5f;cursor:pointer}
button[value=approve]{background:#1f3a5f;color:#fff}
button[value=deny]{background:#fff;color:#1f3a5f}
"""


def _document(title: str, body: str) -> str:
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1">
<title>{escape(title)}</title><style>{_STYLE}</style></head>
<body>
{body}
</body></html>
"""


def consent_page(
    *,
    action: str,
    request_id: str,
    csrf: str,
    client_name: str,
    redirect_uri: str,
    groups: Sequence[tuple[str, Sequence[tuple[str, str]]]],
    purpose: str | None,
) -> str:
    """``groups``: (connector label, [(checkbox value, stream name)]) in display order."""
    sets = []
    for label, streams in groups:
        boxes = "\n".join(
            f'<label><input type="checkbox" name="stream" value="{escape(value)}" checked> {escape(name)}</label>'
            for value, name in streams
        )
        sets.append(f"<fieldset><legend>{escape(label)}</legend>\n{boxes}\n</fieldset>")
    host = urlsplit(redirect_uri).netloc or redirect_uri
    why = f'<p class="note">Purpose stated by the app: {escape(purpose)}</p>' if purpose else ""
    body = f"""<h1>Allow read access?</h1>
<div class="app"><strong id="client-name">{escape(client_name)}</strong> asks to read data from this
PDPP sandbox. After you decide you will be sent back to <code>{escape(host)}</code>.</div>
{why}
<form method="post" action="{escape(action)}">
<input type="hidden" name="request_id" value="{escape(request_id)}">
<input type="hidden" name="csrf_token" value="{escape(csrf)}">
<p class="note">Read-only. Untick any stream you do not want to share. You can revoke the grant later.</p>
{"".join(sets)}
<div class="actions">
<button type="submit" name="decision" value="approve">Approve</button>
<button type="submit" name="decision" value="deny">Deny</button>
</div>
</form>"""
    return _document("Allow read access?", body)


def error_page(title: str, message: str) -> str:
    return _document(title, f"<h1>{escape(title)}</h1>\n<p>{escape(message)}</p>")
