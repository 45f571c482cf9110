"""``fastsim arch``: an architecture as JSON."""
from __future__ import annotations

import dataclasses
import json

import click

from .common import load_arch


@click.command("arch")
@click.argument("name", default="npu2")
def show_arch(name):
    """Print an architecture (preset name or TOML file) as JSON.

    Example: fastsim arch examples/wide_array.toml"""
    click.echo(json.dumps(dataclasses.asdict(load_arch(name)), indent=2))
