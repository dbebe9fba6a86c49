"""Rendering of command output (tables, Markdown, JSON documents) kept out of the commands."""
