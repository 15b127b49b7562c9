"""A chat loop with long-term memory: an OpenAI-compatible chat model wrapped with memledger.

Before each reply it recalls what memory holds for the message (the context bundle: the
user's profile, dated memories with their sources, earlier conversations, the agent's
skills); after it, it sends both turns to memledger's ledger, where they are built into
memory once the conversation goes quiet (or at once, with --close).

    python examples/chat_loop.py --memledger http://127.0.0.1:8080 --key "$KEY" \
        --llm http://127.0.0.1:8000/v1 --model tiny --user maya --agent atlas

Type a message per line; an empty line ends. ``--say TEXT`` (repeatable) sends those
messages instead of reading them, and ``--show-context`` prints what was recalled.
"""

from __future__ import annotations

import argparse
import sys
import uuid
from datetime import UTC, datetime

from openai import OpenAI

from memledger.client import Client

SYSTEM = (
    "You are {agent}, a helpful assistant. Use what memory holds about the user when it "
    "helps, and do not invent anything it does not say.\n\n{memory}"
)


def chat_turn(
    llm: OpenAI, model: str, ml: Client, user: str, agent: str, message: str, name: str | None,
    history: list[dict[str, str]], *, show_context: bool = False, at: datetime | None = None,
) -> tuple[str, int | None]:  # fmt: skip
    """Recall, reply, remember: one turn of the conversation; the reply, and the session
    memledger filed it in."""
    bundle = ml.context(message, user_id=user, agent_id=agent, budget_tokens=600)
    if show_context:
        print(f"--- recalled for {message!r}\n{bundle.text or '(nothing yet)'}\n---")
    system = SYSTEM.format(agent=agent, memory=bundle.text or "Memory holds nothing yet.")
    messages = [{"role": "system", "content": system}, *history,
                {"role": "user", "content": message}]  # fmt: skip
    answer = llm.chat.completions.create(
        model=model,
        messages=messages,
        max_tokens=120,
        temperature=0,  # type: ignore[arg-type]
    )
    reply = (answer.choices[0].message.content or "").strip()
    now = at or datetime.now(UTC)
    channel = f"chat-{user}"
    stored = ml.append_events([
        {"external_id": f"u-{uuid.uuid4().hex}", "channel_id": channel, "role": "user",
         "actor_id": user, "actor_name": name, "content": message, "occurred_at": now},
        {"external_id": f"a-{uuid.uuid4().hex}", "channel_id": channel, "role": "assistant",
         "actor_id": agent, "content": reply or "(no answer)", "occurred_at": now},
    ])  # fmt: skip
    history += [{"role": "user", "content": message}, {"role": "assistant", "content": reply}]
    return reply, stored.results[-1].session_id


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--memledger", default="http://127.0.0.1:8080")
    parser.add_argument("--key", required=True, help="a memledger API key of the tenant")
    parser.add_argument("--llm", required=True, help="an OpenAI-compatible base URL (…/v1)")
    parser.add_argument("--llm-key", default="unused")
    parser.add_argument("--model", required=True)
    parser.add_argument("--user", required=True)
    parser.add_argument("--name", help="the user's display name, used in what is remembered")
    parser.add_argument("--agent", default="assistant")
    parser.add_argument("--say", action="append", help="a message to send (repeatable)")
    parser.add_argument("--show-context", action="store_true")
    parser.add_argument(
        "--at", type=datetime.fromisoformat, help="the conversation's time (default: now)"
    )
    parser.add_argument(
        "--close", action="store_true", help="close the conversation at the end: memory builds it"
    )
    args = parser.parse_args(argv)
    llm = OpenAI(base_url=args.llm, api_key=args.llm_key, timeout=120)
    history: list[dict[str, str]] = []
    messages = args.say if args.say else iter(lambda: input("you> ").strip(), "")
    session_id = None
    with Client(args.memledger, args.key) as ml:
        for message in messages:
            if args.say:
                print(f"you> {message}")
            reply, session_id = chat_turn(llm, args.model, ml, args.user, args.agent, message,
                                          args.name,
                                          history, show_context=args.show_context,
                                          at=args.at)  # fmt: skip
            print(f"{args.agent}> {reply}")
        if args.close and session_id is not None:
            ml.close_session(session_id)
    return 0


if __name__ == "__main__":
    sys.exit(main())
