"""Loading calibration profiles for a run or a tenant: read, check against the judge configuration in use."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from bqas.trust.profile import CalibrationProfile, ProfileError, check_profile, load_profile

if TYPE_CHECKING:
    from bqas.judging.engine import JudgeEngine


def load_profiles(
    paths: Iterable[Path], engine: JudgeEngine, judges: Iterable[str] | None = None
) -> dict[str, CalibrationProfile]:
    """Profiles by judge; :class:`ProfileError` for a broken file, a judge not in use, two profiles for one
    judge, or a profile fitted for another judge configuration, model or prompt."""
    wanted = set(judges) if judges is not None else None
    out: dict[str, CalibrationProfile] = {}
    model = engine.llm.config.model if engine.llm is not None else None
    backend = engine.options.backend
    for path in paths:
        profile = load_profile(path)
        if wanted is not None and profile.judge not in wanted:
            raise ProfileError(
                f"{path}: fitted for judge {profile.judge!r}, which this run does not use ({', '.join(sorted(wanted))})"
            )
        if profile.judge in out:
            raise ProfileError(f"{path}: a second profile for judge {profile.judge!r}")
        try:
            spec = engine.registry.get(profile.judge)
        except KeyError:
            raise ProfileError(f"{path}: unknown judge {profile.judge!r}") from None
        check_profile(profile, spec, backend=backend, model=model, where=str(path))
        out[profile.judge] = profile
    return out
