"""The operator console at ``/console``: server-rendered pages (Jinja2, no script) over the
same library calls and use cases as the API.

Signing in takes a tenant's API key. The console then keeps a session in Redis (an
unguessable id in an HttpOnly, SameSite=Strict cookie; the key is never stored), checks
on every request that the key is still not revoked, and works under that tenant's scope:
row-level security keeps another tenant's rows out, so their ids answer 404 as in the
API. Every form carries the session's CSRF token (the sign-in form a token of its own,
double-submitted in a cookie) and a POST without the right one is refused with 403.
"""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Annotated, Any, cast

from fastapi import APIRouter, BackgroundTasks, Depends, Request
from fastapi.responses import RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from ledger.db import Conn, tenant_scope
from ledger.errors import InvalidInput, MemledgerError, NotFound
from ledger.sqlfile import load_queries
from materializers.api import Decision, get_profile, list_skills, review_skill
from observations.edits import entry_history, get_entry
from observations.entry import KINDS, STATUSES
from ops.api.deps import State, owner_of_key
from ops.api.state import ApiState
from ops.usecases.edit import edit, forget_entry
from retrieval.bundle import render_text
from retrieval.context import ContextRequest, build_context
from retrieval.search import Scope

Q = load_queries("ops.api", "console.sql")
COOKIE = "memledger_console"
LOGIN_COOKIE = "memledger_console_login"
SESSION_TTL = timedelta(hours=8)
_PREFIX = "memledger:console:"
templates = Jinja2Templates(directory=Path(__file__).with_name("templates") / "console")
router = APIRouter(prefix="/console", include_in_schema=False)


class ConsoleRefused(MemledgerError):
    """A console request that cannot be served as asked (signed out, no CSRF token)."""


class SignInNeeded(ConsoleRefused):
    """No console session, or its key was revoked: sign in again."""


class CsrfRejected(ConsoleRefused):
    """A form posted without the CSRF token of its session."""


@dataclass(frozen=True, slots=True)
class ConsoleSession:
    sid: str
    tenant_id: str
    key_id: int
    name: str
    csrf: str

    @property
    def actor(self) -> str:
        return f"console:{self.name}"


def _store(state: ApiState) -> Any:
    if state.window is None:
        raise ConsoleRefused("the console keeps its sessions in Redis, which is not configured")
    return state.window.client


def open_session(state: ApiState, tenant_id: str, key_id: int, name: str) -> ConsoleSession:
    session = ConsoleSession(
        secrets.token_urlsafe(32), tenant_id, key_id, name, secrets.token_urlsafe(32)
    )
    fields = {k: str(v) for k, v in asdict(session).items() if k != "sid"}
    client = _store(state)
    client.hset(_PREFIX + session.sid, mapping=fields)
    client.expire(_PREFIX + session.sid, int(SESSION_TTL.total_seconds()))
    return session


def find_session(state: ApiState, sid: str | None) -> ConsoleSession | None:
    if not sid:
        return None
    raw = _store(state).hgetall(_PREFIX + sid)
    if not raw:
        return None
    got = {k.decode(): v.decode() for k, v in raw.items()}
    return ConsoleSession(sid, got["tenant_id"], int(got["key_id"]), got["name"], got["csrf"])


def console_session(request: Request, state: State) -> ConsoleSession:
    """The signed-in session of the request, its key still valid."""
    session = find_session(state, request.cookies.get(COOKIE))
    if session is None:
        raise SignInNeeded()
    with state.connection() as conn, tenant_scope(conn, session.tenant_id):
        params = {"key_id": session.key_id, "tenant_id": session.tenant_id}
        if conn.execute(Q["console_key"], params).fetchone() is None:
            _store(state).delete(_PREFIX + session.sid)
            raise SignInNeeded("the key this session was opened with is revoked")
    return session


Session = Annotated[ConsoleSession, Depends(console_session)]


def scoped(session: Session, state: State) -> Iterator[Conn]:
    """A connection in one transaction under the session's tenant scope."""
    with state.connection() as conn, tenant_scope(conn, session.tenant_id):
        yield conn


ScopedConn = Annotated[Conn, Depends(scoped, scope="function")]


async def form_of(request: Request, session: Session) -> dict[str, str]:
    """The posted form, once its CSRF token is the session's."""
    form = {k: str(v) for k, v in (await request.form()).items()}
    if not secrets.compare_digest(form.get("csrf", ""), session.csrf):
        raise CsrfRejected("the form has no valid CSRF token: reload the page and try again")
    return form


Form = Annotated[dict[str, str], Depends(form_of)]


def page(request: Request, name: str, session: ConsoleSession | None, **values: Any) -> Response:
    context = {"session": session, "csrf": session.csrf if session else "", **values}
    return templates.TemplateResponse(request, name, context)


def _back(to: str) -> RedirectResponse:
    return RedirectResponse(to, status_code=303)


# ------------------------------------------------------------------------------ sign in


@router.get("/login")
def login_page(request: Request, error: str | None = None) -> Response:
    token = secrets.token_urlsafe(32)
    response = page(request, "login.html", None, login_csrf=token, error=error)
    response.set_cookie(LOGIN_COOKIE, token, httponly=True, samesite="strict", path="/console")
    return response


@router.post("/login")
async def login(request: Request, state: State) -> Response:
    form = {k: str(v) for k, v in (await request.form()).items()}
    expected = request.cookies.get(LOGIN_COOKIE, "")
    if not expected or not secrets.compare_digest(form.get("csrf", ""), expected):
        raise CsrfRejected("the sign-in form has no valid CSRF token: reload the page")
    key = form.get("api_key", "").strip()
    owner = owner_of_key(request.app.state.key_cache, state, key) if key else None
    if owner is None:
        return _back("/console/login?error=unknown+or+revoked+API+key")
    session = open_session(state, owner.tenant_id, owner.key_id, owner.name or str(owner.key_id))
    response = _back("/console/users")
    response.set_cookie(
        COOKIE, session.sid, httponly=True, samesite="strict", path="/console",
        max_age=int(SESSION_TTL.total_seconds()),
    )  # fmt: skip
    response.delete_cookie(LOGIN_COOKIE, path="/console")
    return response


@router.post("/logout")
def logout(session: Session, form: Form, state: State) -> Response:
    _store(state).delete(_PREFIX + session.sid)
    response = _back("/console/login")
    response.delete_cookie(COOKIE, path="/console")
    return response


@router.get("")
def home() -> Response:
    return _back("/console/users")


# ------------------------------------------------------------------------------ users


@router.get("/users")
def users(request: Request, session: Session, conn: ScopedConn) -> Response:
    rows = conn.execute(Q["console_users"], {"tenant_id": session.tenant_id}).fetchall()
    return page(request, "users.html", session, users=rows)


@router.get("/users/{user_id:path}")
def profile(request: Request, user_id: str, session: Session, conn: ScopedConn) -> Response:
    rows = get_profile(conn, session.tenant_id, user_id)
    if not rows:  # a user may have entries and no profile yet: one entry is enough
        known = {**_filters(session, {"owner": user_id}), "limit": 1}
        if conn.execute(Q["console_entries"], known).fetchone() is None:
            raise NotFound(f"no user {user_id!r}")
    return page(request, "profile.html", session, user_id=user_id, rows=rows)


# ------------------------------------------------------------------------------ entries


def _filters(session: ConsoleSession, query: Mapping[str, str]) -> dict[str, Any]:
    def text(name: str) -> str | None:
        return query.get(name) or None

    def day(name: str) -> datetime | None:
        value = text(name)
        try:
            return datetime.fromisoformat(value) if value else None
        except ValueError:
            raise InvalidInput(f"{name} is not a date (YYYY-MM-DD)", field=name) from None

    return {
        "tenant_id": session.tenant_id, "owner": text("owner"), "kind": text("kind"),
        "status": text("status"), "since": day("since"), "until": day("until"), "limit": 500,
    }  # fmt: skip


@router.get("/entries")
def entries(request: Request, session: Session, conn: ScopedConn) -> Response:
    query = dict(request.query_params)
    rows = conn.execute(Q["console_entries"], _filters(session, query)).fetchall()
    return page(request, "entries.html", session, entries=rows, query=query, kinds=KINDS,
                statuses=STATUSES)  # fmt: skip


@router.get("/entries/{entry_id}")
def entry(request: Request, entry_id: int, session: Session, conn: ScopedConn) -> Response:
    row = get_entry(conn, session.tenant_id, entry_id)
    params = {"tenant_id": session.tenant_id, "ids": list(row["source_event_ids"])}
    events = conn.execute(Q["console_events"], params).fetchall()
    history = entry_history(conn, session.tenant_id, entry_id)
    fields = json.dumps(row["fields"], indent=2, ensure_ascii=False, default=str)
    return page(request, "entry.html", session, entry=row, events=events, history=history,
                fields=fields)  # fmt: skip


@router.post("/entries/{entry_id}/{action}")
def change_entry(
    entry_id: int,
    action: str,
    session: Session,
    form: Form,
    conn: ScopedConn,
    state: State,
    tasks: BackgroundTasks,
) -> Response:
    """``edit`` rewrites the statement (re-embedded), ``delete`` deletes the entry (kept
    as history), as the API's PUT and DELETE do."""
    actor, tenant, defer = session.actor, session.tenant_id, tasks.add_task
    if action == "edit":
        statement = form.get("statement", "")
        edit(conn, tenant, entry_id, statement, actor=actor, deps=state, defer=defer)
    elif action == "delete":
        forget_entry(conn, tenant, entry_id, actor=actor, deps=state, defer=defer)
    else:
        raise NotFound(f"no action {action!r} on entries")
    return _back(f"/console/entries/{entry_id}")


# ------------------------------------------------------------------------------ skills


@router.get("/skills")
def skills(
    request: Request, session: Session, conn: ScopedConn, status: str | None = None
) -> Response:
    found = list_skills(conn, session.tenant_id, status=status or None)
    return page(request, "skills.html", session, skills=found, status=status or "")


@router.post("/skills/{skill_id}/review")
def review(skill_id: int, session: Session, form: Form, conn: ScopedConn, state: State) -> Response:
    decision = cast(Decision, form.get("decision", ""))  # review_skill names a bad one
    reason = form.get("reason") or None
    review_skill(conn, session.tenant_id, skill_id, decision, session.actor, reason,
                 now=state.clock())  # fmt: skip
    return _back("/console/skills")


# ------------------------------------------------------------------------------ sessions


@router.get("/sessions")
def sessions(
    request: Request, session: Session, conn: ScopedConn, status: str | None = None
) -> Response:
    params = {"tenant_id": session.tenant_id, "status": status or None}
    rows = conn.execute(Q["console_sessions"], params).fetchall()
    return page(request, "sessions.html", session, sessions=rows, status=status or "")


@router.post("/sessions/{session_id}/retry")
def retry(session_id: int, session: Session, form: Form, state: State) -> Response:
    params = {"tenant_id": session.tenant_id, "id": session_id}
    with state.connection() as conn, tenant_scope(conn, session.tenant_id):
        if conn.execute(Q["console_session"], params).fetchone() is None:
            raise NotFound(f"no session {session_id}")
        retried = conn.execute(Q["console_retry"], params).fetchone()
    if retried is not None:  # committed: the hand-over reads it
        state.queue_builds(session.tenant_id, [session_id])
    return _back("/console/sessions")


# ------------------------------------------------------------------------------ operations


@router.get("/runs")
def runs(request: Request, session: Session, conn: ScopedConn) -> Response:
    rows = conn.execute(Q["console_runs"], {"tenant_id": session.tenant_id}).fetchall()
    return page(request, "runs.html", session, runs=rows)


STAGES = {
    "ingest": ("session_gap_minutes", "max_content_bytes", "max_metadata_bytes",
               "max_future_skew_seconds", "ingest_batch_size"),
    "build": ("extractor", "llm_model", "embedder", "embed_local_model", "embed_model",
              "min_confidence", "worker_threads", "build_max_attempts",
              "build_backoff_seconds", "skill_auto_publish_after"),
    "retrieval": ("context_budget_tokens", "recent_window", "search_candidates",
                  "rank_similarity", "rank_recency", "rank_access", "rank_recency_tau_days",
                  "rank_summary_bonus"),
    "consolidation": ("merge_threshold", "decay_after_days", "decay_min_accesses",
                      "decay_half_life_days", "decay_threshold", "max_active_entries",
                      "retention_days", "maintenance_interval_seconds"),
}  # fmt: skip  # what each stage runs with; no URL or secret is shown


@router.get("/config")
def config(request: Request, session: Session, state: State) -> Response:
    values = state.settings.model_dump()
    stages = {
        stage: [(name, values[name]) for name in names if name in values]
        for stage, names in STAGES.items()
    }
    return page(request, "config.html", session, stages=stages)


@router.get("/search")
def search_page(
    request: Request,
    session: Session,
    conn: ScopedConn,
    state: State,
    q: str = "",
    user: str = "",
    agent: str = "",
    unreviewed: bool = False,
) -> Response:
    bundle, text = None, ""
    if q.strip():
        request_ = ContextRequest(
            scope=Scope(session.tenant_id, user or None, agent or None),
            query=q,
            budget_tokens=state.settings.context_budget_tokens,
            unreviewed_skills=unreviewed,
        )
        bundle = build_context(conn, request_, embedder=state.embedder, counter=state.counter,
                               now=state.clock(), settings=state.search)  # fmt: skip
        text = render_text(bundle)
    return page(request, "search.html", session, q=q, user=user, agent=agent,
                unreviewed=unreviewed, bundle=bundle, text=text)  # fmt: skip


def refused(request: Request, exc: Exception) -> Response:
    """Signed out: to the sign-in page; a form without its CSRF token: 403."""
    if isinstance(exc, SignInNeeded):
        return _back("/console/login")
    return error_page(request, 403 if isinstance(exc, CsrfRejected) else 503, str(exc))


def error_page(request: Request, code: int, message: str) -> Response:
    """Any error of a console page, as a page with its status (404 for another tenant's
    ids, 422 for a bad value, as in the API)."""
    response = page(request, "error.html", None, code=code, message=message)
    response.status_code = code
    return response
