"""Stored permission rules per profile (CRUD); matching lives in ``rules``."""

from __future__ import annotations

from sqlalchemy.engine import Engine
from sqlmodel import Session, col, select

from app.db.models import PermissionRule, Profile
from app.errors import NotFoundError, ValidationFailed
from app.schemas import validate_rule
from app.services.store.store import unenforceable_deny


def _check_deny(profile: Profile, rule: str, decision: str) -> None:
    if decision == "deny" and (why := unenforceable_deny(profile.backend, rule)) is not None:
        raise ValidationFailed("rule", why)


def list_rules(engine: Engine, profile_id: str) -> list[PermissionRule]:
    with Session(engine) as db:
        if db.get(Profile, profile_id) is None:
            raise NotFoundError(f"Profile {profile_id} not found")
        stmt = (
            select(PermissionRule)
            .where(col(PermissionRule.profile_id) == profile_id)
            .order_by(col(PermissionRule.created_at))
        )
        return list(db.exec(stmt))


def add_rule(engine: Engine, *, profile_id: str, rule: str, decision: str) -> PermissionRule:
    """Store a rule; an identical existing rule is returned instead of duplicated."""
    rule = validate_rule(rule)
    with Session(engine) as db:
        profile = db.get(Profile, profile_id)
        if profile is None:
            raise NotFoundError(f"Profile {profile_id} not found")
        _check_deny(profile, rule, decision)
        existing = db.exec(
            select(PermissionRule).where(
                col(PermissionRule.profile_id) == profile_id,
                col(PermissionRule.rule) == rule,
                col(PermissionRule.decision) == decision,
            )
        ).first()
        if existing is not None:
            return existing
        row = PermissionRule(profile_id=profile_id, rule=rule, decision=decision)
        db.add(row)
        db.commit()
        db.refresh(row)
        return row


def update_rule(
    engine: Engine, *, profile_id: str, rule_id: str, rule: str, decision: str
) -> PermissionRule:
    with Session(engine) as db:
        row = db.get(PermissionRule, rule_id)
        if row is None or row.profile_id != profile_id:
            raise NotFoundError(f"Rule {rule_id} not found")
        rule = validate_rule(rule)
        profile = db.get(Profile, profile_id)
        if profile is not None:
            _check_deny(profile, rule, decision)
        row.rule = rule
        row.decision = decision
        db.add(row)
        db.commit()
        db.refresh(row)
        return row


def delete_rule(engine: Engine, *, profile_id: str, rule_id: str) -> None:
    with Session(engine) as db:
        row = db.get(PermissionRule, rule_id)
        if row is None or row.profile_id != profile_id:
            raise NotFoundError(f"Rule {rule_id} not found")
        db.delete(row)
        db.commit()


def rule_pairs(engine: Engine, profile_id: str) -> list[tuple[str, str]]:
    return [(r.rule, r.decision) for r in list_rules(engine, profile_id)]
