"""The CLI as a client of the library: a Request built from a command's options, run with the writer of the
chosen format (and a progress bar for a long run on a terminal), then the exit code."""

from __future__ import annotations

from gradcli.commands.common import OutputFormat, finish, shows_progress, with_progress


def run_request(request, output: OutputFormat, *, rules) -> None:
    """Compute ``request`` (gradcli.library.requests) writing ``output``: the --at point's document or table
    (gradcli.render.detail), or each chunk's records as it finishes; exit 1 when something is undefined
    (with --strict: when any point has a warning). ``rules``: the --rule s the command put in force."""
    from gradcli.render.batch import sink_for

    def track(chunks):
        if shows_progress(chunks.seconds, output):
            return with_progress(chunks, chunks.total)
        return chunks

    run = request.run(lambda: sink_for(request.command, output.value, one_point=request.one_point), rules=rules,
                      track=track)
    finish(run.failed)
