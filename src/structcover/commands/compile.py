"""``structcover compile FILE.cu``: compile a program and print its compiler features."""

from __future__ import annotations

from pathlib import Path

import typer
from rich.markup import escape

from structcover.commands._output import console, err_console, fail, print_json, print_table
from structcover.config import load_settings
from structcover.tools.data.text import read_source


def compile_cmd(
    file: Path = typer.Argument(..., help="A CUDA program (.cu)."),
    arch: str = typer.Option(None, "--arch",
                             help="Target architecture (default from settings: sm_90)."),
    via: str = typer.Option(None, "--via", help="nvrtc, nvcc or auto (default from settings)."),
    block_size: int | None = typer.Option(None, "--block-size", min=1, max=1024,
                                          help="Threads per block for occupancy "
                                          "(default: the launch)."),
    include: list[Path] = typer.Option([], "--include", "-I",
                                       help="A folder of the program's own headers (repeatable); "
                                       "passed to nvcc and NVRTC."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON."),
) -> None:
    """Compile FILE and print registers, shared memory, spills, occupancy, PTX mix and errors."""
    from structcover.tools.compiler.features import compiler_features

    if not file.is_file():
        fail(f"{file}: no such file")
    if via is not None and via not in ("auto", "nvrtc", "nvcc"):
        fail(f"--via {via!r}: expected nvrtc, nvcc or auto")
    settings = load_settings().compiler
    if via is not None:
        settings = settings.model_copy(update={"via": via})
    try:
        feats = compiler_features(read_source(file), arch=arch or settings.arch,
                                  block_size=block_size, settings=settings,
                                  include_dirs=list(include) or None)
    except ValueError as exc:
        fail(str(exc))
    result = feats.result
    if as_json:
        print_json({
            "file": str(file), "ok": result.ok, "via": result.via, "arch": result.arch,
            "cached": result.cached, "seconds": result.seconds,
            "compiler_version": result.compiler_version,
            "kernels_emitted": result.kernels_emitted,
            "features": feats.values(),
            "kernels": [{"kernel": k.kernel, **k.stats.model_dump(exclude={"kernel"}),
                         "block_size": k.block_size, "block_source": k.block_source,
                         "occupancy": k.occupancy.theoretical, "limiter": k.occupancy.limiter,
                         "ld_global": k.mix.ld_global, "st_global": k.mix.st_global,
                         "ld_shared": k.mix.ld_shared, "fma": k.mix.fma,
                         "flops_per_global_byte": k.mix.flops_per_global_byte}
                        for k in feats.kernels],
            "errors": result.errors, "notes": result.notes,
        })
    else:
        status = "ok" if result.ok else "FAILED"
        console.print(f"{file}: {status} via {result.via} for {result.arch} "
                      f"({result.seconds * 1000:.0f} ms{', cached' if result.cached else ''})")
        if feats.kernels:
            print_table("kernels", ["kernel", "regs", "smem B", "spill B", "block", "occupancy",
                                    "limiter", "ld.g", "st.g", "ld.s", "fma", "flop/B"],
                        [[escape(k.kernel), k.stats.registers, k.stats.smem_bytes,
                          k.stats.spill_store_bytes + k.stats.spill_load_bytes,
                          f"{k.block_size} ({k.block_source})",
                          k.occupancy.theoretical, k.occupancy.limiter, k.mix.ld_global,
                          k.mix.st_global, k.mix.ld_shared, k.mix.fma,
                          k.mix.flops_per_global_byte] for k in feats.kernels])
        if result.ok and not feats.kernels:
            err_console.print(f"[yellow]no kernel emitted[/yellow]: "
                              f"{escape(result.no_kernel_reason() or '')}")
        for err in result.errors:
            where = f"line {err.line}" if err.line else err.origin
            err_console.print(f"[red]error[/red] ({where}): {escape(err.message)}")
            if err.source_line:
                err_console.print(f"    {escape(err.source_line.strip())}")
    if not result.ok:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add the compile command."""
    app.command("compile")(compile_cmd)
