"""The Typer commands: thin, keyword-only wrappers that parse options, call the core and render."""
