"""``--plot-file FILE``: a command's plot drawn into a picture (gradcli.render.plot_file), the file's name,
folder and the drawing library checked before anything is computed."""

from __future__ import annotations

from typing import Annotated, Optional

import typer

from gradcli.commands.common import export_path


def plot_file_path(value: str | None) -> str | None:
    if value is None:
        return None
    export_path(value)  # a file name, in a folder that exists and can be written
    from gradcli.render.plot_file import picture_problem

    problem = picture_problem(value)
    if problem:
        raise typer.BadParameter(problem)
    return value


def refuse_same_file(plot_file: str | None, svg: str | None, html: str | None) -> None:
    """The picture and the --svg/--html export are written to different files (the export, written last,
    would replace the picture)."""
    from gradcli.output_files import refuse_inputs

    refuse_inputs({"--plot-file": plot_file, "--svg": svg, "--html": html}, [])


PlotFileOption = Annotated[Optional[str], typer.Option(
    "--plot-file", metavar="FILE", callback=plot_file_path, show_default=False,
    help="Also draw the plot in a picture: FILE.png or FILE.svg.")]
