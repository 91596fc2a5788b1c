"""What an update check looked at: every release newer than a build in use, best first, and why
each one is or is not the one offered (refused before, a better one is offered, older than the
build in use). :meth:`~strata_gui.core.bench.updates.EngineUpdater.survey` makes it; the CLI prints
:meth:`UpdateSurvey.report` and the Engines page shows a line per release.

A refused release is skipped, not a wall: the best release not refused is offered, so a later
good build is tried even while a higher one stays refused.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

from strata_gui.core.base import texts
from strata_gui.core.base.texts import QT_TRANSLATE_NOOP, T
from strata_gui.core.engines.plan import Candidate

if TYPE_CHECKING:
    from strata_gui.core.bench.updates import UpdateOffer
    from strata_gui.core.engines.records import InstalledEngine
    from strata_gui.core.engines.updates import UpdateEntry

# UpdateCandidate.verdict
OFFERED = "offered"
SKIPPED = "skipped"


def when(at: float) -> str:
    """Epoch seconds as the user's local date and minute."""
    return datetime.fromtimestamp(at).strftime("%Y-%m-%d %H:%M")


def refused_reason(refusal: UpdateEntry | None, reason: str) -> str:
    """Why a refused build is skipped, with when it was refused when the history still says."""
    if refusal is None:
        return T(QT_TRANSLATE_NOOP("Core", "refused before because {reason}"), reason=reason)
    return T(QT_TRANSLATE_NOOP("Core", "refused at {time} because {reason}"), time=when(refusal.at), reason=reason)


@dataclass(frozen=True)
class UpdateCandidate:
    """One release an update check looked at for a build in use.

    Attributes:
        kind: The engine kind's name ("text", "image").
        group: Kind, source, backend and family (see
            :func:`~strata_gui.core.engines.updates.engine_group`).
        current: The build in use.
        candidate: The release's build for this group (its ``engine_id``, ``tag``, asset).
        version: The build as the release names itself (its title: "b7651" for a release moved to
            tag "b9001"); what it is ranked by.
        published_at: The release's date (ISO 8601, as GitHub gives it).
        verdict: :data:`OFFERED` or :data:`SKIPPED`.
        why: Why it is skipped ("refused at … because …", "older than …"), or why the offered one
            will not be tried (pinned); "" otherwise.
        refused: An earlier trial refused it (``--retry`` tries it again).
    """

    kind: str
    group: str
    current: InstalledEngine
    candidate: Candidate
    version: str
    published_at: str
    verdict: str
    why: str = ""
    refused: bool = False

    @property
    def tag(self) -> str:
        return self.candidate.tag or ""

    def label(self) -> str:
        """The release as the user knows it: its tag, and its own name when that differs."""
        tag, version = texts.shown(self.tag), texts.shown(self.version)  # both come from the release feed
        date = self.published_at[:10] or "?"
        if version and version != tag:
            return T(QT_TRANSLATE_NOOP("Core", "{tag} (named {version}, {date})"), tag=tag, version=version, date=date)
        return T(QT_TRANSLATE_NOOP("Core", "{tag} ({date})"), tag=tag, date=date)

    def line(self) -> str:
        """"b7700 (2026-03-02): offered" / "b9001 (named b7651, 2026-02-20): skipped: refused at …"."""
        if self.verdict == OFFERED:
            if self.why:
                return T(QT_TRANSLATE_NOOP("Core", "{release}: offered, not tried: {why}"), release=self.label(),
                         why=self.why)
            return T(QT_TRANSLATE_NOOP("Core", "{release}: offered"), release=self.label())
        return T(QT_TRANSLATE_NOOP("Core", "{release}: skipped: {why}"), release=self.label(), why=self.why)

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "group": self.group, "current": self.current.id, "engine": self.candidate.engine_id,
                "tag": self.tag, "version": self.version, "published_at": self.published_at,
                "verdict": self.verdict, "why": self.why or None, "refused": self.refused, "line": self.line()}


@dataclass(frozen=True)
class UpdateSurvey:
    """What an update check found.

    Attributes:
        offers: The build to try per build in use (the best release not refused).
        candidates: Every release looked at, per build in use, best first.
        retries: Refused builds ranked above the offer of their group (or with no offer), best
            first: what ``--retry`` tries before the offer.
        unfinished: Trials that did not finish (stopped, or their process ended) and were not tried
            again since.
    """

    offers: list[UpdateOffer] = field(default_factory=list)
    candidates: list[UpdateCandidate] = field(default_factory=list)
    retries: list[UpdateOffer] = field(default_factory=list)
    unfinished: list[UpdateEntry] = field(default_factory=list)

    def groups(self) -> list[str]:
        """The groups with something to try, offers' groups first."""
        return list(dict.fromkeys([o.group for o in self.offers] + [o.group for o in self.retries]))

    def candidate_lines(self) -> list[str]:
        """Per build in use: a heading, then one indented line per release looked at."""
        lines: list[str] = []
        current = None
        for cand in self.candidates:
            if cand.group != current:
                current = cand.group
                lines.append(T(QT_TRANSLATE_NOOP("Core", "Releases looked at for {backend} {tag} ({engine}):"),
                               backend=cand.candidate.backend, tag=cand.current.tag, engine=cand.current.id))
            lines.append("  " + cand.line())
        return lines

    def notes(self) -> list[str]:
        """What happened to trials that did not finish."""
        return [T(QT_TRANSLATE_NOOP("Core", "note: {message} ({time}); the next update tries it again."),
                  message=h.message, time=when(h.at)) for h in self.unfinished]

    def summary(self) -> list[str]:
        """The check's outcome: a line per offer, or "All engines are up to date."."""
        return [o.message() for o in self.offers] or [QT_TRANSLATE_NOOP("Core", "All engines are up to date.")]

    def report(self) -> str:
        """The offers (or "All engines are up to date."), the releases looked at, and the notes."""
        return "\n".join(self.summary() + self.candidate_lines() + self.notes())

    def to_json(self) -> dict[str, Any]:
        return {"offers": [o.to_json() for o in self.offers], "candidates": [c.to_json() for c in self.candidates],
                "retries": [o.to_json() for o in self.retries], "unfinished": [h.to_json() for h in self.unfinished]}
