"""The caller's world that a warm call must run in, as a cold run would: its file-creation mask, resource
limits, niceness, mount namespace and Python variables (standard library only: the client imports this).

The client describes its world in the run request (:func:`describe`); the daemon compares it with its own
(:func:`why_not_here`) and refuses the call, which then runs cold, where the child could not become the
caller (a mount namespace of its own: the caller's paths name other files; a limit or a niceness the child
may not take, since only a privileged process raises them; a Python variable that takes effect when the
interpreter starts); the child then takes the rest (:func:`enter`).
"""

from __future__ import annotations

import os
import resource

# Limits the forked child takes as the caller has them. The address-space ones are left out: the child is
# a TensorFlow-sized process already, and under a smaller limit a cold run fails in its own way (at
# TensorFlow's import) that the child cannot reproduce: a caller with another such limit runs cold.
APPLIED = ("RLIMIT_CPU", "RLIMIT_FSIZE", "RLIMIT_CORE", "RLIMIT_NOFILE", "RLIMIT_NPROC", "RLIMIT_LOCKS",
           "RLIMIT_SIGPENDING", "RLIMIT_MSGQUEUE", "RLIMIT_MEMLOCK", "RLIMIT_RTTIME", "RLIMIT_RSS")
ALIKE = ("RLIMIT_AS", "RLIMIT_DATA", "RLIMIT_STACK")
PYTHON_PREFIX = "PYTHON"


def _limit_names(names: tuple[str, ...]) -> list[str]:
    return [name for name in names if hasattr(resource, name)]


def _limits() -> dict[str, list[int]]:
    return {name: list(resource.getrlimit(getattr(resource, name))) for name in _limit_names(APPLIED + ALIKE)}


def _umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/mnt")
    except OSError:
        return None


def python_variables(environ=os.environ) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k.startswith(PYTHON_PREFIX)}


def describe() -> dict:
    """This process's world, for the run request."""
    return {"umask": _umask(), "limits": _limits(), "nice": os.getpriority(os.PRIO_PROCESS, 0),
            "mount_namespace": _namespace(), "python": python_variables()}


def why_not_here(world: object) -> str | None:
    """Why a child of this daemon cannot become a caller of ``world`` (None: it can)."""
    if not isinstance(world, dict):
        return "malformed request"
    if world.get("mount_namespace") is None or world.get("mount_namespace") != _namespace():
        return "another mount namespace: the caller's paths may name other files"
    if world.get("python") != python_variables():
        return "other PYTHON* variables than the daemon's (they take effect when Python starts)"
    nice, umask, limits = world.get("nice"), world.get("umask"), world.get("limits")
    if not isinstance(nice, int) or not isinstance(umask, int) or not isinstance(limits, dict):
        return "malformed request"
    if nice < os.getpriority(os.PRIO_PROCESS, 0):
        return "a lower niceness than the daemon's"
    own = _limits()
    for name in own:
        theirs = limits.get(name)
        if not (isinstance(theirs, list) and len(theirs) == 2 and all(isinstance(v, int) for v in theirs)):
            return "malformed request"
        if name in ALIKE and theirs != own[name]:
            return f"another {name[7:].lower()} limit than the daemon's"
        if name not in ALIKE and _above(theirs[1], own[name][1]):
            return f"a higher {name[7:].lower()} limit than the daemon may give"
    return None


def _above(limit: int, bound: int) -> bool:
    """Whether ``limit`` is beyond ``bound`` (RLIM_INFINITY is beyond every number)."""
    if bound == resource.RLIM_INFINITY:
        return False
    return limit == resource.RLIM_INFINITY or limit > bound


def enter(world: dict) -> None:
    """In the forked child: become the caller's world (checked by :func:`why_not_here` first)."""
    os.umask(world["umask"])
    for name in _limit_names(APPLIED):
        soft, hard = world["limits"][name]
        resource.setrlimit(getattr(resource, name), (soft, hard))
    if world["nice"] != os.getpriority(os.PRIO_PROCESS, 0):
        # niceness is a thread's on Linux: each of the child's threads (TensorFlow's pools) takes it
        for task in _tasks():
            try:
                os.setpriority(os.PRIO_PROCESS, task, world["nice"])
            except OSError:  # a thread that ended meanwhile
                pass


def _tasks() -> list[int]:
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]
