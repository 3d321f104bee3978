"""What is present on this machine, and how to get what is missing (``structcover doctor``)."""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path

from pydantic import BaseModel


class Check(BaseModel):
    """One capability: present or not, what was found, how to get it."""

    name: str
    ok: bool
    detail: str
    how_to_get: str = ""
    required: bool = False


def _run(cmd: list[str]) -> str:
    out = subprocess.run(cmd, capture_output=True, text=True, timeout=20, check=False)
    return (out.stdout + out.stderr).strip()


def check_cxx() -> Check:
    """A host C++ compiler: the CPU emulator builds kernels with it."""
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("clang++")
    if not cxx:
        return Check(name="host C++ compiler", ok=False, required=True,
                     detail="no g++ or clang++ on PATH",
                     how_to_get="apt-get install g++ (needed by the CPU emulator)")
    return Check(name="host C++ compiler", ok=True, required=True,
                 detail=_run([cxx, "--version"]).splitlines()[0])


def check_nvcc() -> Check:
    """nvcc from a toolkit or from the nvidia-cuda-nvcc wheels."""
    path: Path | str | None
    try:
        from structcover.tools.compiler.toolchain import find_nvcc
        path = find_nvcc()
    except ImportError:
        path = shutil.which("nvcc")
    if not path:
        return Check(name="nvcc", ok=False, detail="not found on PATH, CUDA_HOME or wheels",
                     how_to_get="pip install structcover (nvcc comes from its wheels) or install "
                                "the CUDA toolkit")
    version = next((line for line in _run([str(path), "--version"]).splitlines()
                    if "release" in line), "")
    return Check(name="nvcc", ok=True, detail=f"{path} {version.strip()}")


def check_nvrtc() -> Check:
    """NVRTC in-process (the fast compile path)."""
    try:
        from cuda.bindings import nvrtc
        err, major, minor = nvrtc.nvrtcVersion()
        if int(err) != 0:
            raise RuntimeError(str(err))
        return Check(name="NVRTC", ok=True, detail=f"NVRTC {major}.{minor} via cuda.bindings")
    except Exception as exc:
        return Check(name="NVRTC", ok=False, detail=f"not usable: {exc}",
                     how_to_get="pip install structcover "
                                "(cuda-bindings + nvidia-cuda-nvrtc)")


def check_gpu() -> Check:
    """A CUDA driver and at least one GPU."""
    try:
        from cuda.bindings import driver
        (err,) = driver.cuInit(0)
        if int(err) != 0:
            raise RuntimeError(f"cuInit: {err}")
        err, count = driver.cuDeviceGetCount()
        if int(err) != 0 or count == 0:
            raise RuntimeError("no CUDA device")
        err, dev = driver.cuDeviceGet(0)
        err, name = driver.cuDeviceGetName(100, dev)
        label = bytes(name).split(b"\0")[0].decode()
        return Check(name="GPU", ok=True, detail=f"{count} device(s): {label}")
    except Exception as exc:
        return Check(name="GPU", ok=False, detail=f"none usable ({exc})",
                     how_to_get="a machine with an NVIDIA GPU and driver, plus "
                                "pip install 'structcover[gpu]'; verification then times kernels")


def check_nvml() -> Check:
    """NVML for power, energy and clocks."""
    try:
        import pynvml
        pynvml.nvmlInit()
        version = pynvml.nvmlSystemGetDriverVersion()
        pynvml.nvmlShutdown()
        return Check(name="NVML", ok=True, detail=f"driver {version}")
    except Exception as exc:
        return Check(name="NVML", ok=False, detail=f"not usable ({type(exc).__name__})",
                     how_to_get="pip install 'structcover[gpu]' on a machine with a driver")


def check_llm(base_url: str | None) -> Check:
    """An OpenAI-compatible endpoint (vLLM), if one is configured."""
    if not base_url:
        return Check(name="LLM endpoint", ok=False, detail="none configured (offline policies)",
                     how_to_get="vllm serve <model>, then --llm http://host:8000/v1 or "
                                "STRUCTCOVER_LLM__BASE_URL")
    try:
        with urllib.request.urlopen(base_url.rstrip("/") + "/models", timeout=3) as reply:
            return Check(name="LLM endpoint", ok=True, detail=f"{base_url} answered {reply.status}")
    except (urllib.error.URLError, OSError) as exc:
        return Check(name="LLM endpoint", ok=False, detail=f"{base_url} did not answer: {exc}",
                     how_to_get="start the server, or check the URL")


def check_llm_client() -> Check:
    """The client library the LLM policies talk through (``campaign --llm``, ``chat``)."""
    if importlib.util.find_spec("langchain_openai") is not None:
        return Check(name="LLM client", ok=True, detail="langchain-openai installed")
    return Check(name="LLM client", ok=False,
                 detail="langchain-openai missing (campaign --llm and chat are unavailable)",
                 how_to_get="pip install 'structcover[agents]'")


def check_ray() -> Check:
    """Ray, for ``--executor ray`` (features, verify, demo and campaign on a cluster)."""
    if importlib.util.find_spec("ray") is None:
        return Check(name="Ray", ok=False, detail="not installed (--executor local only)",
                     how_to_get="pip install 'structcover[ray]'")
    from importlib.metadata import PackageNotFoundError, version

    try:
        return Check(name="Ray", ok=True, detail=f"ray {version('ray')} (--executor ray)")
    except PackageNotFoundError:
        return Check(name="Ray", ok=True, detail="ray importable (--executor ray)")


def check_store(state_dir: Path) -> Check:
    """The local memory store (Chroma) and a writable state folder."""
    has_chroma = importlib.util.find_spec("chromadb") is not None
    target = state_dir if state_dir.exists() else state_dir.parent
    writable = os.access(target if target.exists() else Path.cwd(), os.W_OK)
    detail = f"state {state_dir} {'writable' if writable else 'NOT writable'}; " \
             f"chromadb {'installed' if has_chroma else 'missing'}"
    return Check(name="store", ok=writable and has_chroma, detail=detail,
                 how_to_get="" if has_chroma else "pip install structcover (chromadb is a core "
                                                  "dependency of the campaign)")


def check_sandbox() -> Check:
    """The OS sandbox (bubblewrap + seccomp) every untrusted compile and run goes through."""
    try:
        from structcover.tools.verify.jail import UNSANDBOXED_HINT, jail_status
        ok, why = jail_status()
    except ImportError as exc:
        return Check(name="sandbox", ok=False, required=True, detail=f"not importable: {exc}")
    if ok:
        return Check(name="sandbox", ok=True, required=True, detail=why)
    return Check(name="sandbox", ok=False, required=True,
                 detail=f"{why}; untrusted programs are refused",
                 how_to_get="apt-get install bubblewrap, and allow unprivileged user namespaces "
                            "(sysctl kernel.unprivileged_userns_clone=1, or run the container "
                            "with --security-opt seccomp=unconfined); otherwise "
                            + UNSANDBOXED_HINT)


def check_build_cache() -> Check:
    """The emulator's build cache: where it is, how big, and what a watcher prunes."""
    from structcover.config import load_settings
    from structcover.tools.verify.cache_prune import per_program_usage

    verify = load_settings().verify
    folder = Path(verify.cache_dir)
    if not folder.exists():
        return Check(name="build cache", ok=True, detail=f"{folder}: empty (built on first use)")
    total = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file() and not f.is_symlink())
    n, size = per_program_usage(folder)
    limit = ("never pruned" if verify.cache_max_gb is None
             else f"each watch round or campaign run prunes them to {verify.cache_max_gb:g} GB")
    writable = os.access(folder, os.W_OK)
    return Check(name="build cache", ok=writable,
                 detail=f"{folder}: {total / 1e9:.2f} GB, of which {n} per-program builds "
                        f"{size / 1e9:.2f} GB ({limit}; verify.cache_max_gb)",
                 how_to_get="" if writable else
                 f"make {folder} writable, or set STRUCTCOVER_VERIFY__CACHE_DIR")


def run_checks(*, llm_base_url: str | None, state_dir: Path) -> list[Check]:
    """Run every check; none raises."""
    checks: list[Callable[[], Check]] = [
        check_cxx, check_sandbox, check_nvcc, check_nvrtc, check_gpu, check_nvml,
        lambda: check_llm(llm_base_url), check_llm_client, check_ray,
        lambda: check_store(state_dir), check_build_cache]
    return [c() for c in checks]
