"""The ``structcover`` command line (typer).

Each command group lives in its own module under ``structcover/commands/`` and exposes
``register(app)``; this file only assembles them, so groups can grow independently.
"""

from __future__ import annotations

import importlib
import pkgutil

import typer

from structcover import __version__, commands

app = typer.Typer(
    name="structcover",
    help="Structure coverage for RLVR training data on CUDA kernels: discover the structures "
    "that drive speed, measure how the data covers them, and fill the gaps.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"structcover {__version__}")
        raise typer.Exit()


@app.callback()
def _root(version: bool = typer.Option(False, "--version", callback=_version, is_eager=True,
                                       help="Print the version and exit.")) -> None:
    """STRUCT-COVER."""


def _register_all() -> None:
    for info in sorted(pkgutil.iter_modules(commands.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        module = importlib.import_module(f"structcover.commands.{info.name}")
        module.register(app)


_register_all()


def main() -> None:
    """Console-script entry point."""
    app()
