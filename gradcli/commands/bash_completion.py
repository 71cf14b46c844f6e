"""gradcli's bash completion script: the word being completed is read from the command line itself.

bash splits the line at every character of ``COMP_WORDBREAKS`` (``:`` and ``=`` among them) before it calls
a completion function, so Typer's script, which passes bash's words on, hands gradcli ``sgd``, ``:``,
``0.1,ada`` for ``-o sgd:0.1,ada`` and nothing completes. gradcli's script passes the line (``COMP_LINE`` up
to ``COMP_POINT``) and ``COMP_WORDBREAKS``; gradcli reads the last word from it as the shell would
(quotes, backslashes), completes the whole word, and drops from each candidate the part bash keeps: bash
replaces only the text after the word's last unquoted break character (what bash-completion's
``__ltrim_colon_completions`` does in shell).

The script never evaluates what it receives: each line gradcli prints is one element of ``COMPREPLY``,
not word-split, not globbed. Typer prints its own bash script for ``--show-completion`` and
``--install-completion`` and offers no public way to change it (``add_completion_class`` covers only the
program's side), so :func:`use_for_bash` replaces the one entry in Typer's table of scripts.
"""

from __future__ import annotations

import importlib
import os

import typer

# The Click package Typer runs on (Typer 0.28 vendors one as typer._click), reached through a public class.
_CLICK = next(c for c in typer.BadParameter.__mro__ if c.__name__ == "ClickException").__module__.rpartition(".")[0]
shell_completion = importlib.import_module(f"{_CLICK}.shell_completion")

# The name in ``_GRADCLI_COMPLETE=complete_bash_line``: Typer re-registers its own class as "bash" each time it
# builds the command, so this one has a name of its own (an old script's complete_bash still gets Typer's).
SHELL = "bash_line"
DEFAULT_WORDBREAKS = " \t\n\"'><=;|&(:"

# %(...)s are filled in by Typer or Click; a literal percent sign would be written %%.
BASH_SCRIPT = r"""
%(complete_func)s() {
    local IFS=$'\n' candidate
    COMPREPLY=()
    # One candidate a line, each one plain element: no word splitting, no globbing, no eval.
    while IFS= read -r candidate; do
        [[ -n $candidate ]] && COMPREPLY+=("$candidate")
    done < <(env COMP_WORDS="${COMP_WORDS[*]}" COMP_CWORD="$COMP_CWORD" \
                 COMP_LINE="$COMP_LINE" COMP_POINT="$COMP_POINT" COMP_WORDBREAKS="$COMP_WORDBREAKS" \
                 %(autocomplete_var)s=complete_bash_line "$1")
    return 0
}

complete -o default -F %(complete_func)s %(prog_name)s
"""


def current_word(line: str, breaks: str) -> tuple[int, str, list[int]]:
    """The last word of ``line`` as bash reads it: where it starts in ``line``, its text without the shell's
    quoting, and the positions in that text of the break characters bash splits it at (those outside
    quotes and not escaped). Earlier words are left to Click's ``split_arg_string``."""
    start, word, split_at = 0, "", []
    quote, escaped = "", False
    for i, c in enumerate(line):
        if escaped:
            if quote == '"' and c not in '$`"\\\n':
                word += "\\"  # in double quotes a backslash escapes only these
            escaped = False
            word += c
        elif quote == "'":
            quote, word = ("", word) if c == "'" else (quote, word + c)
        elif c == "\\":
            escaped = True
        elif quote == '"':
            quote, word = ("", word) if c == '"' else (quote, word + c)
        elif c in "'\"":
            quote = c
        elif c in " \t\n":
            start, word, split_at = i + 1, "", []
        else:
            if c in breaks:
                split_at.append(len(word))
            word += c
    return start, word, split_at


def after_breaks(candidate: str, count: int, breaks: str) -> str | None:
    """What is left of ``candidate`` after its first ``count`` break characters (None: it has fewer)."""
    for i, c in enumerate(candidate):
        if count == 0:
            return candidate[i:]
        if c in breaks:
            count -= 1
    return "" if count == 0 else None


class BashLineComplete(shell_completion.ShellComplete):
    """``complete_bash_line``: what :data:`BASH_SCRIPT` asks for."""

    name = SHELL
    source_template = BASH_SCRIPT

    def source_vars(self) -> dict[str, str]:
        return {"complete_func": self.func_name, "autocomplete_var": self.complete_var,
                "prog_name": self.prog_name}

    def words(self) -> tuple[list[str], str, int, str, str]:
        """The arguments before the word, the word (an ``--option=`` in front taken off, as Click does),
        how many break characters bash keeps in front of what it replaces, the break characters, and
        what goes back in front of a candidate (the ``--option=`` where bash does not break at its '=')."""
        breaks = os.environ.get("COMP_WORDBREAKS") or DEFAULT_WORDBREAKS  # unset: bash's default
        breaks = "".join(c for c in breaks if c not in " \t\n\"'")  # quotes and blanks are read as such
        line, point = os.environ.get("COMP_LINE", ""), os.environ.get("COMP_POINT", "")
        if not line or not point.isdigit():  # called without them: bash's own words, as Typer reads them
            words = shell_completion.split_arg_string(os.environ.get("COMP_WORDS", ""))
            cword = int(os.environ.get("COMP_CWORD", "0") or 0)
            return words[1:cword], (words[cword] if cword < len(words) else ""), 0, breaks, ""
        before = line[:int(point)]
        start, word, split_at = current_word(before, breaks)
        args = shell_completion.split_arg_string(before[:start])[1:]
        front = ""
        if word.startswith("-") and "=" in word:
            name, _, word = word.partition("=")
            args.append(name)
            front = "" if len(name) in split_at else name + "="  # bash replaces the whole word then
            split_at = [i - len(name) - 1 for i in split_at if i > len(name)]
        return args, word, len(split_at), breaks, front

    def get_completion_args(self) -> tuple[list[str], str]:
        args, incomplete, *_ = self.words()
        return args, incomplete

    def format_completion(self, item) -> str:
        return str(item.value)

    def complete(self) -> str:
        args, incomplete, kept, breaks, front = self.words()
        out = []
        for item in self.get_completions(args, incomplete):
            rest = after_breaks(self.format_completion(item), kept, breaks)
            if rest and "\n" not in rest:
                out.append(front + rest)
        return "\n".join(out)


def use_for_bash() -> None:
    """gradcli's script for ``--show-completion bash`` and ``--install-completion bash``, and its class."""
    shell_completion.add_completion_class(BashLineComplete, SHELL)
    from typer import _completion_shared

    scripts = getattr(_completion_shared, "_completion_scripts", None)
    if isinstance(scripts, dict) and "bash" in scripts:  # a Typer without the table keeps its own script
        scripts["bash"] = BASH_SCRIPT
