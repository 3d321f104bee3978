"""The ``structcover`` command line (typer).

Each command group lives in its own module under ``structcover/commands/`` and exposes
``register(app)``; this file only assembles them, so groups can grow independently.
"""

from __future__ import annotations

import importlib
import os
import pkgutil
from typing import Any

import typer
from typer.core import TyperGroup
from typer.exceptions import TyperException

from structcover import __version__, commands
from structcover.commands._output import describe_error, fail

#: Set to 1 to let unexpected errors show their traceback (for bug reports).
DEBUG_ENV = "STRUCTCOVER_DEBUG"


class _Group(TyperGroup):
    """The root group: every error a command does not handle becomes one ``error:`` line.

    Bad input (a missing or unreadable file, undecodable bytes, a malformed table or task)
    raises ``OSError``, ``UnicodeDecodeError`` or ``ValueError`` somewhere below a command;
    the user gets the reason and exit status 2, never a traceback. Anything else is a bug:
    exit status 1 and a pointer to :data:`DEBUG_ENV`.
    """

    def invoke(self, ctx: Any) -> Any:
        try:
            return super().invoke(ctx)
        except typer.BadParameter as exc:  # an option out of range: one line, like the rest
            fail(exc.format_message())
        except (TyperException, typer.Exit, typer.Abort):  # usage errors, exits: typer's own
            raise
        except KeyboardInterrupt:
            fail("interrupted", code=130)
        except (OSError, UnicodeError, ValueError, KeyError, LookupError, RecursionError,
                MemoryError) as exc:
            if os.environ.get(DEBUG_ENV) == "1":
                raise
            fail(describe_error(exc))
        except Exception as exc:  # a bug: still one line, with the way to the traceback
            if os.environ.get(DEBUG_ENV) == "1":
                raise
            fail(f"internal error ({type(exc).__name__}: {describe_error(exc)}); rerun with "
                 f"{DEBUG_ENV}=1 for the traceback", code=1)


app = typer.Typer(
    cls=_Group,
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


if __name__ == "__main__":  # python -m structcover.cli (same as the console script)
    main()
