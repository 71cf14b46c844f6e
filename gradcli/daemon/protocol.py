"""The daemon's socket and its frames (standard library only: the client imports this first).

A frame is a 4-byte big-endian length and that many bytes of JSON (an object). The client's request
frame carries its standard descriptors 0, 1 and 2 as SCM_RIGHTS ancillary data.

Conversation for a command::

    client -> {"op": "run", "argv": [...], "cwd": ..., "env": {...}, "stamp": ...}   (+ fds 0, 1, 2)
    daemon -> {"ready": true}  or  {"refused": "why"}          (the client falls back on a refusal)
    client -> {"go": true}                                      (no going back: the command runs)
    client -> {"signal": N} ...                                 (Ctrl-C and the like, relayed)
    daemon -> {"exit": code}

``{"op": "status"}`` and ``{"op": "stop"}`` are answered with one frame.
"""

from __future__ import annotations

import json
import os
import socket
import stat
import struct

MAX_FRAME = 1 << 20  # an argv of 10,000-character expressions fits many times over
HEADER = struct.Struct("!I")
SOCKET_NAME = "daemon.sock"
LOCK_NAME = "daemon.lock"
LOG_NAME = "daemon.log"

# The environment that a command's behaviour depends on, and that the caller's copy decides: each of
# these is set in the child as the caller has it, or unset when the caller has it unset.
ENV_NAMES = ("COLUMNS", "LINES", "NO_COLOR", "FORCE_COLOR", "TERM", "LANG", "TMPDIR", "TF_CPP_MIN_LOG_LEVEL")
ENV_PREFIXES = ("LC_", "GRADCLI_")


class ProtocolError(Exception):
    """A frame that is malformed, too long, or cut short."""


def caller_environment(environ=os.environ) -> dict[str, str]:
    return {k: v for k, v in environ.items() if k in ENV_NAMES or k.startswith(ENV_PREFIXES)}


def runtime_dir(create: bool = False) -> str:
    """``$XDG_RUNTIME_DIR/gradcli`` when that is a directory of ours, else ``/tmp/gradcli-<uid>``: 0700,
    ours. A directory of another owner or with wider permissions is refused (OSError)."""
    base = os.environ.get("XDG_RUNTIME_DIR")
    if base and os.path.isdir(base) and os.stat(base).st_uid == os.getuid():
        path = os.path.join(base, "gradcli")
    else:
        path = os.path.join("/tmp", f"gradcli-{os.getuid()}")
    if create:
        try:
            os.mkdir(path, 0o700)
        except FileExistsError:
            pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid() or info.st_mode & 0o077:
        kind = "folder" if stat.S_ISDIR(info.st_mode) else "link" if stat.S_ISLNK(info.st_mode) else "file"
        raise PermissionError(f"{path} is not a private folder of this user: a {kind} of {_owner(info.st_uid)}, "
                              f"mode {stat.S_IMODE(info.st_mode):04o} (the daemon's needs this user's, 0700); "
                              "remove it, or set XDG_RUNTIME_DIR to a folder of yours")
    return path


def _owner(uid: int) -> str:
    try:
        import pwd

        return f"user {pwd.getpwuid(uid).pw_name} (uid {uid})"
    except (ImportError, KeyError):
        return f"uid {uid}"


def socket_path() -> str:
    return os.path.join(runtime_dir(), SOCKET_NAME)


def install_stamp() -> str:
    """gradcli's version and installation: the version, the package's directory, and the count and newest
    modification time of its .py files (an edit or an upgrade makes a running daemon stale). ~1 ms."""
    import gradcli

    root = os.path.dirname(os.path.abspath(gradcli.__file__))
    count, newest = 0, 0
    pending = [root]
    while pending:
        try:
            entries = list(os.scandir(pending.pop()))
        except OSError:
            continue
        for entry in entries:
            if entry.is_dir(follow_symlinks=False):
                if entry.name != "__pycache__":
                    pending.append(entry.path)
            elif entry.name.endswith(".py"):
                try:
                    newest = max(newest, entry.stat().st_mtime_ns)
                except OSError:
                    continue
                count += 1
    return f"{gradcli.__version__}|{root}|{count}|{newest}"


def encode(message: dict) -> bytes:
    body = json.dumps(message, separators=(",", ":")).encode()
    if len(body) > MAX_FRAME:
        raise ProtocolError("frame too long")
    return HEADER.pack(len(body)) + body


def send(sock: socket.socket, message: dict, fds: list[int] | None = None) -> None:
    data = encode(message)
    if fds:
        sent = socket.send_fds(sock, [data], fds)
        data = data[sent:]
    if data:
        sock.sendall(data)


def _recv_exactly(sock: socket.socket, n: int, fds: list[int] | None, max_fds: int = 3) -> bytes:
    chunks, got = [], 0
    while got < n:
        if fds is not None:
            data, received, _flags, _addr = socket.recv_fds(sock, n - got, max_fds)
            fds.extend(received)
        else:
            data = sock.recv(n - got)
        if not data:
            raise ProtocolError("connection closed")
        chunks.append(data)
        got += len(data)
    return b"".join(chunks)


def receive(sock: socket.socket, fds: list[int] | None = None, max_fds: int = 3) -> dict:
    """One frame; descriptors that come with it (``max_fds`` at most) are appended to ``fds`` (when given:
    else none are taken). EOF before a whole frame, a frame too long, or not a JSON object: ProtocolError."""
    (length,) = HEADER.unpack(_recv_exactly(sock, HEADER.size, fds, max_fds))
    if length > MAX_FRAME:
        raise ProtocolError("frame too long")
    try:
        message = json.loads(_recv_exactly(sock, length, fds, max_fds))
    except ValueError as exc:
        raise ProtocolError(f"not JSON: {exc}") from None
    if not isinstance(message, dict):
        raise ProtocolError("not a JSON object")
    return message
