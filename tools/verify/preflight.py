"""Checks made once before work that compiles and runs generated programs starts."""

from __future__ import annotations

from structcover.tools.verify import jail

__all__ = ["require_jail"]


def require_jail(what: str) -> None:
    """Refuse to start ``what`` where untrusted code could not run: no jail, no opt-out.

    Work that compiles and runs generated programs (a campaign, the demo) checks this once
    before it starts. Without it every program would fail its compile or run one by one, and
    the run would end looking like a result (no candidate, every variant failed) instead of
    saying that the machine lacks the sandbox.

    Args:
        what: The work being started, named in the message (e.g. ``"the campaign"``).

    Raises:
        SandboxUnavailable: No usable jail here and the user did not opt out of it.
    """
    usable, why = jail.jail_status()
    if not usable and not jail.unsandboxed_allowed():
        raise jail.SandboxUnavailable(
            f"{what} cannot start: it compiles and runs untrusted programs, and {why}; to run "
            "them without OS isolation at your own risk, set verify.allow_unsandboxed: true "
            "(STRUCTCOVER_VERIFY__ALLOW_UNSANDBOXED=true); `structcover doctor` checks the "
            "machine")
