"""Agent experiences: what an agent learned from one tool-using task.

A task starts at a user request and runs until the next user message that is itself a new
request (a short follow-up such as "yes, try again" continues the task when more tool
calls follow it; a short message before any tool call adds to the request). For every task
with tool calls we record the goal (the request as a template), the path that finally
worked (the successful calls, in order), what failed (to avoid), the tools it applies to,
and the procedure's key: the tools of the path that worked, in order
(``resy_search+resy_book``), the same for every user and session the agent repeats it in;
a task where nothing worked is keyed by the tools it tried. An experience is shared by
every user of its agent, so nothing of the one conversation is kept in it: people, dates,
ids, amounts and the values of the calls become slots (:mod:`.procedures`). Provenance is
the request event(s) plus the tool_call/tool_result events of the task: the particulars
stay in the ledger, under the user's own events.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from observations.extract.base import AGENT_EXPERIENCE, Extracted, SessionEvent
from observations.extract.dates import day_label
from observations.extract.procedures import (
    argument_values,
    generalize,
    generalize_args,
    generalize_error,
    strip_chat,
)
from observations.extract.rewrite import rewrite_persons
from observations.extract.text import content_words, split_sentences
from observations.extract.tools import ToolOutcome, pair_calls

_POLITE = re.compile(
    r"^(?:(?:hi|hey|hello|ok|okay|so|please|pls|now)\b[,!.]*\s*)*(?:(?:can|could|would|will)"
    r"\s+you\s+(?:please\s+)?|i\s+(?:need|want|would\s+like|['’]d\s+like)\s+(?:you\s+)?to\s+"
    r"|help\s+me\s+(?:to\s+)?|i\s+need\s+|let['’]s\s+|please\s+)?",
    re.IGNORECASE,
)
_TOOL_ROLES = ("tool_call", "tool_result")
_NEW_REQUEST_WORDS = 3


@dataclass
class _Task:
    requests: list[SessionEvent] = field(default_factory=list)
    tool_events: list[SessionEvent] = field(default_factory=list)
    agent_id: str | None = None
    agent_name: str | None = None


def _is_new_request(event: SessionEvent) -> bool:
    return len(content_words(event.content)) >= _NEW_REQUEST_WORDS


def _split_tasks(events: list[SessionEvent]) -> list[_Task]:
    tasks: list[_Task] = []
    current = _Task()
    follow_ups: list[SessionEvent] = []
    for event in events:
        if event.role == "user":
            if current.tool_events and _is_new_request(event):
                tasks.append(current)
                current, follow_ups = _Task(), []
            if current.tool_events:
                follow_ups.append(event)  # part of the task only if more tool calls follow
            elif _is_new_request(event) or not current.requests:
                current.requests = [event]
            else:
                current.requests.append(event)
        elif event.role in _TOOL_ROLES:
            current.requests.extend(follow_ups)
            follow_ups = []
            current.tool_events.append(event)
            if event.role == "tool_call" and current.agent_id is None:
                current.agent_id, current.agent_name = event.actor_id, event.actor_name
    tasks.append(current)
    return [t for t in tasks if any(e.role == "tool_call" for e in t.tool_events)]


def goal_text(
    request: SessionEvent | None, values: dict[str, str], people: tuple[str, ...] = ()
) -> str:
    """The request as a template, said of "the user": "book a table for {party} {date} in
    {city}", "put {title} on the user's calendar"."""
    if request is None:
        return ""
    sentences = split_sentences(request.content) or [request.content]
    chosen = next((s for s in sentences if len(content_words(s)) >= 2), sentences[0])
    goal = strip_chat(_POLITE.sub("", chosen.strip()).rstrip("?!. "))
    goal = generalize(goal, anchor=request.occurred_at, values=values, people=people)
    return rewrite_persons(goal, "the user", "the agent")


def procedure_key(outcomes: list[ToolOutcome]) -> str:
    """The tools of the path that worked, in order; without one, the tools tried."""
    tools = [o.call.tool for o in outcomes if o.ok] or [o.call.tool for o in outcomes]
    return "+".join(dict.fromkeys(tools))


def _statement(
    task: _Task, agent: str, goal: str, outcomes: list[ToolOutcome], errors: list[str]
) -> str:
    first = task.requests[0] if task.requests else task.tool_events[0]
    when = day_label(first.occurred_at.date())
    asked = f"a request to {goal}" if task.requests and goal else "a task"
    path = [o.call.tool for o in outcomes if o.ok]
    failed = [
        f'{o.call.tool} ("{_quotable(error[:80])}")'
        for o, error in zip([o for o in outcomes if not o.ok], errors, strict=True)
    ]
    text = f"On {when}, {agent} handled {asked}"
    text += f": it worked by calling {' then '.join(path)}" if path else ": no tool call succeeded"
    if failed:
        text += f"; failed and to avoid: {'; '.join(failed)}"
    return text + "."


def _quotable(text: str) -> str:
    """A tool's own words, quoted: its double quotes turned single."""
    return text.replace('"', "'").replace("“", "'").replace("”", "'")


def _fields(
    goal: str, key: str, outcomes: list[ToolOutcome], errors: list[str], said: str
) -> dict[str, Any]:
    """``said``: what the conversation's people said; a value of theirs is no constant."""
    tools = list(dict.fromkeys(o.call.tool for o in outcomes))
    ok = [o for o in outcomes if o.ok]
    failed = [o for o in outcomes if not o.ok]
    return {
        "goal": goal,
        "skill_key": key,
        "path": [{"tool": o.call.tool, "args": generalize_args(o.call.args, said)} for o in ok],
        "failures": [
            {"tool": o.call.tool, "args": generalize_args(o.call.args, said), "error": error}
            for o, error in zip(failed, errors, strict=True)
        ],
        "applies_to": tools,
        "tools": tools,
        "outcome": "success" if outcomes[-1].ok else ("partial" if ok else "failure"),
    }


def _item(
    task: _Task, agent_fallback: str, taken: dict[str, int], people: tuple[str, ...], said: str
) -> Extracted:
    agent_id = task.agent_id or agent_fallback
    agent = task.agent_name or agent_id
    outcomes = pair_calls(task.tool_events)
    values = argument_values(o.call.args for o in outcomes)
    goal = goal_text(task.requests[0] if task.requests else None, values, people)
    errors = [generalize_error(o.error, values) for o in outcomes if not o.ok]
    key = procedure_key(outcomes)
    taken[key] = taken.get(key, 0) + 1
    suffix = f":{taken[key]}" if taken[key] > 1 else ""
    paired = {o.call.event.id for o in outcomes} | {o.result.id for o in outcomes if o.result}
    sources = [e.id for e in task.requests] + [e.id for e in task.tool_events if e.id in paired]
    return Extracted(
        kind=AGENT_EXPERIENCE,
        key=f"agent_experience:{key}{suffix}",
        owner_type="agent",
        owner_id=agent_id,
        statement=_statement(task, agent, goal, outcomes, errors),
        confidence=0.8 if any(o.ok for o in outcomes) else 0.6,
        importance=0.7,
        source_event_ids=tuple(sorted(set(sources))),
        valid_from=(task.requests or task.tool_events)[0].occurred_at,
        fields=_fields(goal, key, outcomes, errors, said),
    )


def extract_experiences(events: list[SessionEvent]) -> list[Extracted]:
    """One agent experience per tool-using task, in session order."""
    if not any(e.role == "tool_call" for e in events):
        return []
    assistants = [e.actor_id for e in events if e.role == "assistant"]
    fallback = assistants[0] if assistants else "agent"
    taken: dict[str, int] = {}
    people = tuple(dict.fromkeys(e.actor_name for e in events if e.role == "user" and e.actor_name))
    # what the people said, and who they are: a value of theirs is no constant of a procedure
    said = " ".join(
        f"{e.content} {e.actor_id} {e.actor_name or ''}"
        for e in events
        if e.role in ("user", "assistant")
    )
    return [_item(task, fallback, taken, people, said) for task in _split_tasks(events)]
