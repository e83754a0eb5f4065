"""SQLModel table classes. The schema itself is owned by the Alembic migrations."""

from __future__ import annotations

import secrets
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import JSON, Column, ForeignKey, Index, String, UniqueConstraint
from sqlmodel import Field, SQLModel


def utcnow() -> datetime:
    return datetime.now(UTC)


def new_id() -> str:
    """A stable URL-safe id (16 random bytes, base64url)."""
    return secrets.token_urlsafe(16)


class Profile(SQLModel, table=True):
    id: str = Field(default_factory=new_id, primary_key=True)
    name: str
    backend: str
    cwd: str
    model: str | None = None
    permission_mode: str = "default"
    allowed_tools: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    disallowed_tools: list[str] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    mcp_servers: dict[str, Any] = Field(
        default_factory=dict, sa_column=Column(JSON, nullable=False)
    )
    command: list[str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    env: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    # 0 = wait forever for a permission answer.
    permission_timeout_s: int = 600
    idle_timeout_s: int | None = None
    reasoning_effort: str | None = None
    # New sessions get a git worktree of their own unless they ask otherwise.
    worktree_default: bool = False
    # Files git ignores (e.g. ".env") copied into each new worktree.
    worktree_copy: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow)


class PermissionRule(SQLModel, table=True):
    __tablename__ = "permission_rule"

    id: str = Field(default_factory=new_id, primary_key=True)
    profile_id: str = Field(foreign_key="profile.id", index=True)
    rule: str
    decision: str  # allow | deny
    created_at: datetime = Field(default_factory=utcnow)


class ChatSession(SQLModel, table=True):
    __tablename__ = "chat_session"

    id: str = Field(default_factory=new_id, primary_key=True)
    profile_id: str = Field(foreign_key="profile.id", index=True)
    backend: str
    backend_session_id: str | None = None
    title: str = ""
    status: str = "idle"
    cost_usd: float = 0.0
    input_tokens: int = 0
    output_tokens: int = 0
    turns: int = 0
    # The mode chosen on the chat page; None = the profile's.
    permission_mode: str | None = None
    # The model chosen on the chat page; None = the profile's.
    model: str | None = None
    # Backend session id this one forks from (until the fork has its own id).
    forked_from: str | None = None
    # The app session this one continues (when the old one could not be resumed).
    continued_from: str | None = None
    # The pid of the backend process while one runs: lets a restarted app reap orphans.
    backend_pid: int | None = None
    # The session's own git worktree (its agent runs there), None when it has none.
    worktree_path: str | None = None
    worktree_branch: str | None = None
    worktree_base: str | None = None
    worktree_base_commit: str | None = None
    # How its worktree went, once it has: "discarded" or "cleaned_up" (merged, then removed
    # by clean-up), and when. The session stays readable; nothing of it runs again.
    worktree_closed: str | None = None
    worktree_closed_at: datetime | None = None
    # Without a worktree: the tree of the folder as the session started, which its
    # changes are read against (outside git, kept in a private git dir under the data dir).
    snapshot_tree: str | None = None
    # Outside git, why the folder has no snapshot (too big to record, unreadable), in
    # the plain words the Changes view shows; None when it has one (or is in git).
    snapshot_note: str | None = None
    # The git dir and work tree the app's own git uses for this session, recorded when it
    # started (a worktree's admin dir under the repository's .git, or the repository's
    # .git): never what a ``.git`` in the folder says later.
    git_dir: str | None = None
    git_work_tree: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    updated_at: datetime = Field(default_factory=utcnow, index=True)


class Event(SQLModel, table=True):
    __table_args__ = (
        UniqueConstraint("session_id", "seq", name="uq_event_session_seq"),
        # (session_id, seq) is already indexed by the unique constraint. "The newest event
        # of a kind" (commands, models, usage, limits…) is asked on every page: without
        # this index it reads a long session's every row backwards.
        Index("ix_event_session_kind_seq", "session_id", "kind", "seq"),
        Index("ix_event_kind_created_at", "kind", "created_at"),
    )

    id: int | None = Field(default=None, primary_key=True)
    session_id: str = Field(foreign_key="chat_session.id")
    seq: int
    kind: str
    payload: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_at: datetime = Field(default_factory=utcnow)


class PermissionRequest(SQLModel, table=True):
    __tablename__ = "permission_request"

    id: str = Field(default_factory=new_id, primary_key=True)
    session_id: str = Field(foreign_key="chat_session.id", index=True)
    backend_request_id: str
    tool: str
    input: dict[str, Any] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    options: list[dict[str, Any]] = Field(
        default_factory=list, sa_column=Column(JSON, nullable=False)
    )
    title: str = ""
    reason: str = ""
    tool_call_id: str = ""
    # "tool", "question" (the agent asks the user) or "plan" (approve and leave plan mode).
    kind: str = Field(default="tool", sa_column_kwargs={"server_default": "tool"})
    # A question's answers, {question text: answer}, once the user gave them.
    answers: dict[str, str] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    rule: str | None = None
    status: str = Field(default="pending", index=True)
    decision: str | None = None
    source: str | None = None
    message: str | None = None
    created_at: datetime = Field(default_factory=utcnow)
    decided_at: datetime | None = None


class SignIn(SQLModel, table=True):
    """One browser signed in with the printed URL; its cookie holds a secret whose hash is here."""

    __tablename__ = "sign_in"

    id: str = Field(default_factory=new_id, primary_key=True)
    # SHA-256 of the cookie's secret: a stolen database file signs no browser in.
    secret_hash: str = Field(unique=True)
    # The browser's User-Agent, shortened: only a label for the user to tell browsers apart.
    label: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    last_used_at: datetime = Field(default_factory=utcnow)
    # The absolute end; an idle sign-in ends earlier (see app/services/access/signins.py).
    expires_at: datetime
    # Which master token made it: a new token signs every browser out.
    token_mark: str


class ReviewComment(SQLModel, table=True):
    """A comment the user wrote on one line of a session's diff, until and after it is
    sent to the agent (app/services/review/comments.py)."""

    __tablename__ = "review_comment"

    id: str = Field(default_factory=new_id, primary_key=True)
    # Deleted with its session by the database itself (foreign keys are on).
    session_id: str = Field(
        sa_column=Column(
            String, ForeignKey("chat_session.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    path: str
    line: int
    side: str  # new | old
    body: str
    # The line as it read when the comment was written, as the message quotes it.
    quote: str
    # A digest of the line and its neighbours then: when it differs now, the comment was
    # answered (the line, or the file around it, changed since).
    context: str
    status: str = "open"  # open | sent
    created_at: datetime = Field(default_factory=utcnow)
    sent_at: datetime | None = None
    # The seq of the user_message event the comment went out in.
    sent_seq: int | None = None


class ScheduledContinue(SQLModel, table=True):
    """A message the app sends to a session at a set time, typically "continue" when a plan
    limit resets (app/services/sessions/schedule.py)."""

    __tablename__ = "scheduled_continue"

    id: str = Field(default_factory=new_id, primary_key=True)
    session_id: str = Field(
        sa_column=Column(
            String, ForeignKey("chat_session.id", ondelete="CASCADE"), nullable=False, index=True
        )
    )
    # When to send, in UTC.
    at: datetime
    message: str
    # pending → sent (marked before sending, so it never goes twice), cancelled or failed.
    state: str = Field(default="pending", index=True)
    created_at: datetime = Field(default_factory=utcnow)
    done_at: datetime | None = None
    # Why sending failed, for the user.
    note: str = ""


class Device(SQLModel, table=True):
    """A device paired to come in through the remote origin (app/services/access/devices.py)."""

    __tablename__ = "device"

    id: str = Field(default_factory=new_id, primary_key=True)
    # SHA-256 of the device cookie's secret, which the server minted at pairing.
    secret_hash: str = Field(unique=True)
    # The name the phone gave when it redeemed the pairing: only a label.
    name: str = ""
    created_at: datetime = Field(default_factory=utcnow)
    last_seen_at: datetime = Field(default_factory=utcnow)


class PushSubscription(SQLModel, table=True):
    """Where to send a Web Push for one browser (app/services/access/push.py)."""

    __tablename__ = "push_subscription"

    id: str = Field(default_factory=new_id, primary_key=True)
    # The push service's URL for this browser: it is the subscription's identity.
    endpoint: str = Field(unique=True)
    # The browser's P-256 public key and auth secret (base64url), for RFC 8291 encryption.
    p256dh: str
    auth: str
    # The browser sign-in it came from: signing that browser out deletes it. None for a
    # bearer-token client, whose subscription lasts until it is deleted or refused.
    signin_id: str | None = Field(
        default=None,
        sa_column=Column(
            String, ForeignKey("sign_in.id", ondelete="CASCADE"), nullable=True, index=True
        ),
    )
    # The paired device it came from (through the remote origin): revoking the device
    # deletes it.
    device_id: str | None = Field(
        default=None,
        sa_column=Column(
            String, ForeignKey("device.id", ondelete="CASCADE"), nullable=True, index=True
        ),
    )
    created_at: datetime = Field(default_factory=utcnow)
