"""Command line: ``fastsim [--threads N] [--debug] COMMAND ...``.

The group ``main`` and its wiring live here; each command group is a module of its own (``run`` and
``run gemm``: ``run.py``, ``run llm``: ``llm.py``, ``map``: ``mapping.py``, ``study``: ``study.py``,
and ``sweep``, ``systolic``, ``plot``, ``optimize``, ``calibrate``, ``compare``, ``arch``, ``models``), and what
they share is in ``common.py``. Commands parse options, call the public API and print; ``--threads`` is a
``fastsim.settings`` scope around the command, never an environment variable.
"""
from __future__ import annotations

import os
import sys

import click

from ..errors import ConfigError, SimulationError
from ..gc_pause import exit_without_collecting
from .arch import show_arch
from .calibrate import calibrate_cmd
from .common import error_text
from .compare import compare_cmd
from .conv import conv_cmd
from .design import design_cmd
from .export import export_group
from .llm import llm_cmd
from .onnx import onnx_cmd
from .mapping import map_group
from .models import models_cmd
from .optimize import optimize_cmd
from .plot import plot_cmd
from .run import run_group
from .study import study_group
from .sweep import sweep_cmd
from .transpose import transpose_cmd
from .systolic import systolic_cmd

__all__ = ["main", "script"]


class _CleanErrors(click.Group):
    """Bad input or a failed simulation ends with one message and exit status 2, never a Python
    traceback (``--debug`` shows it)."""

    def invoke(self, ctx):
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort):
            raise
        except BrokenPipeError:  # the reader stopped (| head): end quietly, as other tools do
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            sys.exit(1)
        except Exception as e:
            if ctx.params.get("debug"):
                raise
            known = isinstance(e, (ConfigError, SimulationError))
            click.echo(f"error: {error_text(e)}" if known else
                       f"error: {type(e).__name__}: {e} (fastsim --debug ... shows the traceback)", err=True)
            sys.exit(2)


@click.group(cls=_CleanErrors)
@click.version_option(package_name="fastsim")
@click.option("--threads", default=None, type=click.IntRange(min=1),
              help="threads a batch of designs is simulated on (default: $FASTSIM_THREADS or every core; "
                   "results do not depend on it), e.g. fastsim --threads 1 run llm")
@click.option("--debug", is_flag=True, help="show the Python traceback of an error, e.g. fastsim --debug run llm")
@click.pass_context
def main(ctx, threads, debug):
    """fastsim: cycle-level simulator of AI-Engine-style spatial NPUs."""
    if threads is not None:
        from ..settings import use

        ctx.with_resource(use(threads=threads))  # in force until the command returns


run_group.add_command(llm_cmd)
run_group.add_command(design_cmd)
run_group.add_command(conv_cmd)
run_group.add_command(transpose_cmd)
run_group.add_command(onnx_cmd)
main.add_command(export_group)
for command in (run_group, map_group, show_arch, sweep_cmd, systolic_cmd, plot_cmd, study_group, optimize_cmd,
                calibrate_cmd, models_cmd, compare_cmd):
    main.add_command(command)


def script() -> None:
    """The ``fastsim`` command: ``main``, then an exit that leaves every object to the operating
    system (``exit_without_collecting``). The interpreter's last cyclic collection would walk every
    object the run created (the JIT's included) only to free memory the process is about to
    return: a third of a small command's time (``fastsim run gemm --m 512 --k 512 --n 512``: 2.1 s
    -> 1.6 s)."""
    exit_without_collecting()
    main()
