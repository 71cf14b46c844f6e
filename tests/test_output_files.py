"""Files written where the user names them (--svg, --html, --plot-file): whole or not at all, never onto the
run's own input, never through a symbolic link, never a file named '-'."""

from __future__ import annotations

import os
import stat

import pytest

from gradcli.errors import ComputeError, UsageError
from gradcli.output_files import check_output_path, refuse_inputs, write_whole


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "table.svg"
    target.write_text("the old picture")

    def fails_half_way(file):
        file.write("half of a new pic")
        raise OSError(27, "File too large")

    with pytest.raises(ComputeError, match="cannot write .*table.svg: File too large"):
        write_whole(str(target), fails_half_way)
    assert target.read_text() == "the old picture"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.svg"]


def test_an_interrupted_write_leaves_the_old_file_and_no_temporary(tmp_path):
    target = tmp_path / "table.svg"
    target.write_text("the old picture")

    def interrupted(file):
        file.write("half")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_whole(str(target), interrupted)
    assert target.read_text() == "the old picture"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["table.svg"]


def test_a_written_file_has_the_mode_open_would_give_it(tmp_path):
    old = os.umask(0o027)
    try:
        write_whole(str(tmp_path / "new.svg"), lambda f: f.write("new"))
        kept = tmp_path / "kept.svg"
        kept.write_text("old")
        kept.chmod(0o604)
        write_whole(str(kept), lambda f: f.write("new"))
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.svg").stat().st_mode) == 0o640
    assert stat.S_IMODE(kept.stat().st_mode) == 0o604 and kept.read_text() == "new"


def test_names_that_are_refused(tmp_path):
    (tmp_path / "real.svg").write_text("mine")
    (tmp_path / "link.svg").symlink_to(tmp_path / "real.svg")
    for path, message in [("-", "not standard output"), (str(tmp_path), "is a folder"),
                          (str(tmp_path / "link.svg"), "is a symbolic link"),
                          (str(tmp_path / "none" / "a.svg"), "no folder")]:
        with pytest.raises(UsageError, match=message):
            check_output_path(path)
    assert check_output_path(str(tmp_path / "real.svg")) == str(tmp_path / "real.svg")
    data = tmp_path / "p.csv"
    data.write_text("x\n1\n")
    with pytest.raises(UsageError, match="is the run's own input"):
        refuse_inputs({"--svg": str(data)}, [str(data)])
    with pytest.raises(UsageError, match="--svg and --html name the same file"):
        refuse_inputs({"--svg": "a.svg", "--html": "./a.svg"}, [])
    refuse_inputs({"--svg": "a.svg", "--html": None}, [str(data), None, "-"])


def test_the_cli_never_replaces_its_input_nor_follows_a_link(tmp_path, invoke, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "p.csv").write_text("x\n1\n2\n")
    (tmp_path / "f.txt").write_text("x**2\n")
    (tmp_path / "target.txt").write_text("someone's file\n")
    (tmp_path / "link.svg").symlink_to(tmp_path / "target.txt")
    for args, message in [(["eval", "x**2", "--points", "p.csv", "--svg", "p.csv"], "is the run's own input"),
                          (["grad", "--file", "f.txt", "--at", "x=1", "-m", "fd", "--html", "f.txt"],
                           "is the run's own input"),
                          (["eval", "x", "--at", "x=1", "--svg", "link.svg"], "is a symbolic link"),
                          (["eval", "x", "--at", "x=1", "--svg", "-"], "not standard output")]:
        result = invoke(*args)
        assert result.exit_code == 2 and message in result.stderr, (args, result.stderr)
    assert (tmp_path / "p.csv").read_text() == "x\n1\n2\n"
    assert (tmp_path / "target.txt").read_text() == "someone's file\n"
    assert not (tmp_path / "-").exists()
    assert invoke("eval", "x", "--at", "x=1", "--svg", "ok.svg").exit_code == 0
    assert (tmp_path / "ok.svg").read_text().startswith("<svg")
