"""The CLI as a client of the library: a Request built from a command's options, run with the writer of the
chosen format (and a progress bar for a long run on a terminal), then the exit code."""

from __future__ import annotations

from gradcli.commands.common import OutputFormat, finish, output_to, shows_progress, with_progress


def run_request(request, output: OutputFormat, *, rules, output_path: str | None = None) -> None:
    """Compute ``request`` (gradcli.library.requests) writing ``output``: the --at point's document or table
    (gradcli.render.detail), or each chunk's records as it finishes; exit 1 when something is undefined
    (with --strict: when any point has a warning). ``rules``: the --rule s the command put in force;
    ``output_path``: --output (gradcli.commands.common.output_to)."""
    with output_to(output_path, output) as file:
        _run(request, output, rules, file)


def _run(request, output: OutputFormat, rules, file) -> None:
    from gradcli.render.batch import sink_for

    def track(chunks):
        if shows_progress(chunks.seconds, output):
            return with_progress(chunks, chunks.total)
        return chunks

    run = request.run(lambda: sink_for(request.command, output.value, one_point=request.one_point, file=file),
                      rules=rules,
                      track=track)
    finish(run.failed)
