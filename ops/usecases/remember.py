"""Remember: messages a client hands over directly (``/v1/memories``, Mem0's ``add``),
stored as a session of their own that is closed and built like any chat."""

from __future__ import annotations

import hashlib
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ledger.db import Conn
from ledger.scope import MAX_ID_LENGTH
from observations.builder import MEMORY_METADATA
from observations.edits import InvalidEdit
from ops.usecases.base import Defer, Deps
from ops.usecases.ingest import BatchRejected, Ingested, close, ingest

ROLES = ("user", "assistant", "system")  # the chat roles, stored as the same event roles
_LITERAL_CHANNEL_IDS = 100  # user ids named as they are in a default channel: up to this long


@dataclass(frozen=True, slots=True)
class ChatMessage:
    role: str
    content: str


@dataclass(frozen=True, slots=True)
class Remembered:
    ingested: Ingested
    sessions_closed: list[int]  # the sessions the messages went to, each closed now


def default_channel(prefix: str, user_id: str) -> str:
    """The channel a user's remembered messages go to when none is named:
    ``<prefix>-<user id>`` for a user id of up to 100 characters; for a longer one, its
    first characters and a hash of the whole, as long as a channel id may be (longer than
    any of the first kind: distinct users keep distinct channels)."""
    if len(user_id) <= _LITERAL_CHANNEL_IDS:
        return f"{prefix}-{user_id}"
    digest = hashlib.sha256(user_id.encode()).hexdigest()[:16]
    return f"{prefix}-{user_id[: MAX_ID_LENGTH - len(prefix) - 18]}-{digest}"


def chat_messages(raw: Sequence[dict[str, Any]]) -> list[ChatMessage]:
    """Chat messages as OpenAI-style clients send them: a role (user, assistant, system)
    and a content that is text or a list of parts, whose text parts are joined."""
    messages = []
    for i, m in enumerate(raw):
        role, content = m.get("role", "user"), m.get("content")
        if role not in ROLES:
            raise InvalidEdit("role must be user, assistant or system", field=f"messages.{i}.role")
        if isinstance(content, list):
            parts = [p.get("text") for p in content if isinstance(p, dict)]
            content = "\n".join(p for p in parts if isinstance(p, str))
        if not isinstance(content, str):
            raise InvalidEdit("content must be text", field=f"messages.{i}.content")
        messages.append(ChatMessage(role, content))
    return messages


def remember(
    conn: Conn,
    tenant_id: str,
    messages: Sequence[ChatMessage],
    *,
    channel: str,
    speaker: str,
    assistant: str,
    metadata: dict[str, Any],
    deps: Deps,
    defer: Defer,
) -> Remembered:
    """Append messages (user turns by ``speaker``) as a session of their own and close it;
    ``metadata`` goes to the memories built from them. The channel must have no open
    session: the messages would join a live chat and close it. The batch policy is
    ingest's: one message the ledger refuses fails them all, named by its position, and
    the caller's transaction writes nothing."""
    now = deps.clock()
    events = [
        {
            "external_id": f"memory-{uuid.uuid4().hex}",
            "channel_id": channel,
            "role": m.role,
            "actor_id": assistant if m.role == "assistant" else speaker,
            "content": m.content,
            "occurred_at": now,
            "metadata": {MEMORY_METADATA: metadata} if metadata else {},
        }
        for m in messages
    ]
    try:
        ingested = ingest(conn, tenant_id, events, deps, defer)
    except BatchRejected as exc:  # the metadata is the request's, the rest each message's
        r = exc.rejections[0]
        field = "metadata" if r.field == "metadata" else f"messages.{r.index}.{r.field}"
        raise InvalidEdit(r.reason, field=field, rejected=len(exc.rejections)) from exc
    result = ingested.result
    opened = sorted({o.session_id for o in result.outcomes if o.session_id is not None})
    # Whether the append joined or closed a session it did not open was decided under the
    # ledger lock it holds until the caller commits: no chat event slips in between.
    if not {*opened, *result.closed} <= set(result.opened):
        raise InvalidEdit(
            "the channel has an open session (a live chat): remember into a channel of its own",
            field="channel_id",
        )
    for session_id in opened:
        close(conn, tenant_id, session_id, deps, defer)
    return Remembered(ingested, sorted({*result.closed, *opened}))
