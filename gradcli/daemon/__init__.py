"""``gradcli daemon``: a warm process (TensorFlow, SymPy and Typer imported) that runs commands for the
console script when ``GRADCLI_DAEMON=1``; see docs/daemon.md.

- :mod:`gradcli.daemon.protocol`: the frames on the Unix socket, and where the socket lives;
- :mod:`gradcli.daemon.client`: what the console script does first (standard library only);
- :mod:`gradcli.daemon.server`: the daemon, which forks a child per request;
- :mod:`gradcli.daemon.child`: what such a child does (the caller's descriptors, directory, environment);
- :mod:`gradcli.daemon.control`: ``gradcli daemon start|stop|status|restart``.

This package's ``__init__`` and its protocol and client modules import only the standard library: the
client decides whether the daemon takes a call before Typer, NumPy or SymPy are imported.
"""
