"""S(y): structural features of programs, one at a time or as a table over a process pool.

:func:`extract_features` never raises on its input: anything the parser cannot read shows up
as ``parse.error_nodes``, and an internal failure in one family sets ``parse.extract_error``
while the other families still report. :func:`extract_table` streams programs through a
process pool and caches each result by content hash, so re-running on a grown dataset only
extracts the new programs.
"""

from __future__ import annotations

import gc
import hashlib
import json
import os
from collections.abc import Callable, Iterable, Iterator
from functools import lru_cache
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pandas as pd

from structcover.schema import FeatureVector, content_hash
from structcover.tools.cuda_ast import decode_source, embedded_cuda, looks_like_python, parse
from structcover.tools.data.atomic import write_text
from structcover.tools.executors.base import Executor, Failed, Quarantined
from structcover.tools.features.ast import ast_features
from structcover.tools.features.dataflow import Resolver
from structcover.tools.features.dataflow_measures import dataflow_features
from structcover.tools.features.delegation import delegation_features
from structcover.tools.features.expert import expert_features
from structcover.tools.features.facts import collect
from structcover.tools.features.memory import collect_accesses, memory_features
from structcover.tools.features.parallel import parallel_features
from structcover.tools.features.patterns import PatternSet, pattern_counts
from structcover.tools.features.registry import FEATURES, NAMES, defaults
from structcover.tools.features.structure import pattern_features
from structcover.tools.features.tasklevel import detect_language, task_features
from structcover.tools.features.techniques import technique_features
from structcover.tools.features.tiling import tiling_features

#: Bump when any feature's definition changes: it invalidates cached results.
EXTRACTOR_VERSION = "5"
DEFAULT_MAX_BYTES = 5_000_000


def _safe(values: dict[str, Any], fn: Callable[..., dict[str, Any]], *args: Any) -> None:
    try:
        values.update(fn(*args))
    except Exception:  # noqa: BLE001 - one family failing must not lose the others
        values["parse.extract_error"] = True


def _triton(values: dict[str, Any], text: str, family_only: bool = False) -> None:
    """Triton reading of a Python program (tools/features/triton_features.py).

    A file that also carries load_inline CUDA keeps the CUDA reading of every shared
    feature and only gets the ``triton.*`` family (docs/FEATURES.md, "Triton").
    """
    from structcover.tools.features.triton_features import triton_feature_values

    try:
        found = triton_feature_values(text)
    except (SyntaxError, ValueError):
        # Malformed Python: counted like the CUDA parser's error nodes.
        values["parse.error_nodes"] = 1
        values["parse.error_fraction"] = 1.0
        return
    except Exception:  # noqa: BLE001 - never raise on input
        values["parse.extract_error"] = True
        return
    if family_only:
        found = {k: v for k, v in found.items() if k.startswith("triton.")}
    values.update(found)


def extract_values(source: str | bytes, patterns: PatternSet | None = None,
                   max_source_bytes: int = DEFAULT_MAX_BYTES) -> dict[str, Any]:
    """Every registered feature (plus ``pattern.<id>`` counts) of one program, as a dict.

    Args:
        source: Program text: CUDA, or Python (Triton, CuTe DSL, PyTorch, load_inline).
        patterns: Mined patterns to count (None: no pattern features).
        max_source_bytes: Longer inputs are cut to this size (``parse.truncated``).

    Returns:
        Feature name to raw value.
    """
    # The walk allocates many small objects and frees them by reference counting; the
    # cyclic collector only adds pauses that grow with the heap (minutes on a 5 MB file).
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _extract_values(source, patterns, max_source_bytes)
    finally:
        if gc_was_enabled:
            gc.enable()


def _extract_values(source: str | bytes, patterns: PatternSet | None,
                    max_source_bytes: int) -> dict[str, Any]:
    values = defaults()
    facts = None
    if patterns is not None:
        values.update({f"pattern.{pid}": 0 for pid in patterns.ids})
    try:
        values["parse.encoding"] = "utf-8"
        if isinstance(source, str):
            text = source
        else:
            text, values["parse.encoding"] = decode_source(source)
        language = detect_language(text)
        cuda_text: str | None = text
        if language in ("torch", "triton", "cute") or (language == "unknown"
                                                       and looks_like_python(text)):
            cuda_text = embedded_cuda(text) or None
            if cuda_text is not None:
                language = "cuda"
                values["program.embedded_cuda"] = True
        if cuda_text is not None:
            parsed = parse(cuda_text, max_source_bytes)
            facts = collect(parsed)
            values["parse.truncated"] = parsed.truncated
            values["parse.error_nodes"] = facts.errors
            values["parse.error_fraction"] = facts.errors / max(facts.nodes, 1)
            resolvers: dict[int, Resolver] = facts.resolvers
            mem = collect_accesses(facts, resolvers)
            _safe(values, memory_features, facts, mem, resolvers)
            _safe(values, tiling_features, facts, mem)
            _safe(values, parallel_features, facts, mem, resolvers)
            _safe(values, ast_features, facts, resolvers)
            _safe(values, dataflow_features, facts, resolvers)
            _safe(values, expert_features, facts, mem, resolvers)
            if patterns is not None:
                _safe(values, pattern_counts, parsed.root, patterns)
        _safe(values, task_features, facts, language, text)
        _safe(values, delegation_features, facts, text, language)
        if language in ("triton", "cute") and facts is None:
            from structcover.tools.features.tasklevel import python_features
            values["kernel.count"] = python_features(text)["kernel.count"]
        if language == "triton" and facts is None:
            _triton(values, text)
        elif values.get("program.embedded_cuda") and detect_language(text) == "triton":
            _triton(values, text, family_only=True)
    except Exception:  # noqa: BLE001 - never raise on input (issue: robustness)
        values["parse.extract_error"] = True
    finally:
        if facts is not None:
            # Each resolver points back at the facts: without this the whole graph (nodes,
            # sites, definitions) waits for the cyclic collector, whose pass after every
            # program cost ~0.1x a parse on KernelBench files; refcounting frees it now.
            facts.resolvers.clear()
    # Patterns are derived from whatever the families reported, so they are always set.
    _safe(values, pattern_features, values)
    _safe(values, technique_features, values)
    return values


def extract_features(source: str | bytes, patterns: PatternSet | None = None,
                     max_source_bytes: int = DEFAULT_MAX_BYTES) -> FeatureVector:
    """Structural feature vector S(y) of one program; never raises on its content.

    Without ``patterns``, a text's values are remembered (:func:`_remembered_values`): a
    campaign extracts a candidate when a dry run places it, and again when it is verified.
    """
    text = source if isinstance(source, str) else decode_source(source)[0]
    if patterns is None and isinstance(source, str):
        values = dict(_remembered_values(source, max_source_bytes))
    else:
        values = extract_values(source, patterns, max_source_bytes)
    return FeatureVector(program_id=content_hash(text), values=values)


@lru_cache(maxsize=1024)
def _remembered_values(source: str, max_source_bytes: int) -> dict[str, Any]:
    """:func:`extract_values` of a text (callers copy the dict: it is shared)."""
    return extract_values(source, None, max_source_bytes)


# -- tables ---------------------------------------------------------------------------------
_WORKER: dict[str, Any] = {}


def _init_worker(patterns_json: str | None, cache_dir: str | None, max_bytes: int) -> None:
    _WORKER["patterns"] = PatternSet.model_validate_json(patterns_json) if patterns_json else None
    _WORKER["cache"] = Path(cache_dir) if cache_dir else None
    _WORKER["max_bytes"] = max_bytes
    # Cached rows are value lists in column order: the column names are part of the key, so
    # adding a feature can never misread an old row.
    _WORKER["salt"] = EXTRACTOR_VERSION + str(max_bytes) + hashlib.sha256(
        ((patterns_json or "") + ",".join(NAMES)).encode()).hexdigest()


def _cache_path(source: str) -> Path | None:
    cache = _WORKER.get("cache")
    if cache is None:
        return None
    key = hashlib.sha256((_WORKER["salt"] + "\0").encode()
                         + source.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return cache / key[:2] / f"{key}.json"


def _work(item: tuple[str, str]) -> tuple[str, list[Any]]:
    pid, source = item
    names = _WORKER["names"]
    path = _cache_path(source)
    if path is not None and path.exists():
        try:
            return pid, json.loads(path.read_text())
        except (OSError, ValueError):
            pass  # a torn cache file is recomputed
    values = extract_values(source, _WORKER["patterns"], _WORKER["max_bytes"])
    row = [values.get(n) for n in names]
    if path is not None:
        try:
            write_text(json.dumps(row), path)
        except OSError:
            pass  # a read-only cache only costs speed
    return pid, row


def _items(programs: Iterable[tuple[str, str] | str]) -> Iterator[tuple[str, str]]:
    for item in programs:
        if isinstance(item, tuple | list) and len(item) == 2:
            pid, src = item
        else:
            pid, src = None, item
        if isinstance(src, bytes):
            src = decode_source(src)[0]
        if not isinstance(src, str):
            raise ValueError(f"program {pid!r}: source must be str or bytes, "
                             f"got {type(src).__name__}")
        yield (str(pid) if pid is not None else content_hash(src)), src


def column_names(patterns: PatternSet | None = None) -> list[str]:
    """Feature columns of a table, in order (registered features, then patterns)."""
    return [*NAMES, *(f"pattern.{pid}" for pid in (patterns.ids if patterns else []))]


def extract_table(programs: Iterable[tuple[str, str] | str], *, workers: int = 0,
                  cache_dir: Path | None = None, patterns: PatternSet | None = None,
                  max_source_bytes: int = DEFAULT_MAX_BYTES, chunksize: int = 8,
                  on_progress: Callable[[int], None] | None = None,
                  executor: Executor | None = None) -> pd.DataFrame:
    """Features of many programs: one row per program, ``program_id`` plus one column each.

    Programs are streamed (never all parsed trees at once); only the rows are kept.

    Args:
        programs: ``(program_id, source)`` pairs or bare sources (id = content hash).
        workers: Process-pool size; 0 = one per core, 1 = in this process.
        cache_dir: Folder of cached results keyed by content hash (None: no cache).
        patterns: Mined patterns to count as ``pattern.<id>`` columns.
        max_source_bytes: Longer sources are cut (``parse.truncated``).
        chunksize: Programs sent to a worker at a time.
        on_progress: Called with the number of programs done after each one.
        executor: Where batches of ``chunksize`` programs run (a
            :mod:`structcover.tools.executors` executor, e.g. Ray); None = the process pool
            above. With an executor, a program that kills its worker on every try is left out
            of the table and listed in ``table.attrs["quarantined"]`` (id and reason); one our
            machinery failed on (an import or OS error in the worker, a task error) is left out
            and listed in ``table.attrs["failures"]`` (id and cause), never as quarantined.

    Returns:
        The feature table with raw values (counts int, flags bool, floats, categories).
    """
    names = column_names(patterns)
    pjson = patterns.model_dump_json() if patterns is not None else None
    cache = str(cache_dir) if cache_dir is not None else None
    workers = workers or os.cpu_count() or 1
    ids: list[str] = []
    rows: list[tuple[Any, ...]] = []

    def consume(results: Iterable[tuple[str, list[Any]]]) -> None:
        for pid, row in results:
            ids.append(pid)
            rows.append(tuple(row))
            if on_progress is not None:
                on_progress(len(rows))

    if executor is not None:
        stream = executor.map(_work_shared, _items(programs), batch_size=chunksize,
                              shared=(pjson, cache, max_source_bytes, names),
                              on_progress=on_progress)
        on_progress = None  # the executor reports progress itself
        consume(r for r in stream if not isinstance(r, Quarantined))
        frame = _frame(ids, rows, names)
        frame.attrs["quarantined"] = [{"program_id": q.item.strip("'"), "reason": q.reason}
                                      for q in executor.quarantined]
        frame.attrs["failures"] = [{"program_id": f.item.strip("'"), "cause": f.reason}
                                   for f in getattr(executor, "failures", [])
                                   if isinstance(f, Failed)]
        return frame
    if workers == 1:
        _init_worker(pjson, cache, max_source_bytes)
        _WORKER["names"] = names
        consume(_work(item) for item in _items(programs))
    else:
        ctx = get_context("fork" if os.name == "posix" else "spawn")
        with ctx.Pool(workers, initializer=_init_pool,
                      initargs=(pjson, cache, max_source_bytes, names)) as pool:
            consume(pool.imap(_work, _items(programs), chunksize=chunksize))
    return _frame(ids, rows, names)


def apply_source_encoding(table: pd.DataFrame, records: pd.DataFrame) -> pd.DataFrame:
    """Set ``parse.encoding`` from the records' ``source_encoding`` (the ingest decoded the
    bytes, so the table only saw text); rows are matched by ``program_id``."""
    if "source_encoding" not in records.columns or "parse.encoding" not in table.columns:
        return table
    by_id = records.dropna(subset=["source_encoding"]).drop_duplicates("program_id") \
        .set_index("program_id")["source_encoding"]
    found = table["program_id"].map(by_id)
    table["parse.encoding"] = found.where(found.notna(), table["parse.encoding"]).astype(str)
    return table


def _init_pool(pjson: str | None, cache: str | None, max_bytes: int, names: list[str]) -> None:
    _init_worker(pjson, cache, max_bytes)
    _WORKER["names"] = names


def _work_shared(shared: tuple[str | None, str | None, int, list[str]],
                 item: tuple[str, str]) -> tuple[str, list[Any]]:
    # Executor entry: the config arrives with each call (a reference, not a copy, under Ray);
    # the worker sets itself up once per distinct config.
    if _WORKER.get("config") != shared:
        _init_pool(*shared)
        _WORKER["config"] = shared
    return _work(item)


def _frame(ids: list[str], rows: list[tuple[Any, ...]], names: list[str]) -> pd.DataFrame:
    raw = pd.DataFrame.from_records(rows, columns=names) if rows else pd.DataFrame(columns=names)
    kinds = {f.name: f.kind for f in FEATURES}
    # Columns are typed into a dict and joined once: assigning a hundred columns one by one
    # fragments the frame (pandas' PerformanceWarning on every campaign step).
    columns: dict[str, Any] = {"program_id": ids}
    for name in names:
        kind = kinds.get(name, "count")
        if kind == "count":
            columns[name] = pd.to_numeric(raw[name]).fillna(0).astype("int64")
        elif kind == "bool":
            columns[name] = raw[name].fillna(False).astype(bool)
        elif kind == "float":
            columns[name] = pd.to_numeric(raw[name]).astype("float64")
        else:
            columns[name] = raw[name].fillna("unknown").astype(str)
    return pd.DataFrame(columns, index=raw.index)
