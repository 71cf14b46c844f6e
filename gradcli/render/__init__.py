"""Rendering: rich tables for people, strict JSON and CSV for scripts. The core never imports this."""
