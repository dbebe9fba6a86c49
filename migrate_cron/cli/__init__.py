"""Typer commands: parse arguments, call the layers, print. No logic of their own."""
