"""One settings tree for the whole tool: a YAML file plus environment overrides.

Each component receives only its own section (``settings.compiler``, ``settings.verify`` …).
Environment variables override the file: ``STRUCTCOVER_COMPILER__ARCH=sm_80``. Secrets (the
LLM API key) are read only from the environment, never from the file.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, Field, SecretStr
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict


class CompilerSettings(BaseModel):
    """The compile service."""

    arch: str = "sm_90"
    via: Literal["auto", "nvrtc", "nvcc"] = "auto"
    timeout_s: float = 60.0
    cache_dir: Path = Path.home() / ".cache" / "structcover" / "compile"
    #: Folders of the programs' own headers, passed to nvcc (-I) and NVRTC (--include-path).
    include_dirs: list[Path] = Field(default_factory=list)


class FeatureSettings(BaseModel):
    """Structural feature extraction."""

    workers: int = Field(default=0, description="process-pool size; 0 = one per core")
    cache_dir: Path = Path.home() / ".cache" / "structcover" / "features"
    max_source_bytes: int = 5_000_000


class VerifySettings(BaseModel):
    """Execution and equivalence."""

    backend: Literal["auto", "gpu", "cpu", "compile-only"] = "auto"
    trials: int = 5
    #: None = a fresh seed per process (recorded in each verdict); set it to replay a verdict.
    seed: int | None = None
    timeout_s: float = 60.0
    memory_limit_mb: int = 4096
    cache_dir: Path = Path.home() / ".cache" / "structcover" / "emulator"
    #: The watcher (after each round) and ``structcover campaign`` (after its run) prune the
    #: cache's per-program builds (one library per verified candidate) back to this many GB,
    #: least recently used first (None: never).
    cache_max_gb: float | None = Field(10.0, ge=0)
    #: Run untrusted programs without OS isolation where the sandbox (bubblewrap + user
    #: namespaces) is unavailable; off by default, so such machines refuse them.
    allow_unsandboxed: bool = False
    #: Folders of the programs' own headers for the GPU (nvcc) and compile-only (NVRTC/nvcc)
    #: backends.
    include_dirs: list[Path] = Field(default_factory=list)


class DiscoverySettings(BaseModel):
    """Feature discovery (mutual information, redundancy, tiers)."""

    tau_high: float = 0.05
    tau_low: float = 0.01
    bootstrap: int = 20
    #: F* is built by forward selection: a feature enters only if it adds this much
    #: out-of-fold information (nats, folds keep tasks whole) given those already selected.
    #: 0.02 nats is an R² gain of about 4 % on unseen tasks; smaller gains on a few programs
    #: per task are mostly which-program-is-which, not structure that generalises.
    min_gain: float = 0.02
    #: Tiers are calibrated on a within-task permutation null: critical = MI above
    #: max(tau_high, its null level + critical_factor x the null spread).
    critical_factor: float = 3.0
    correct_only: bool = True
    normalize_within_task: bool = True
    seed: int = 0


class ArchiveSettings(BaseModel):
    """The coverage archive and diagnosis."""

    bins_per_feature: int = 3
    low_count: int = 3
    collapse_rho: float = 0.8
    cvt_above_dims: int = 4
    cvt_cells: int = 64
    #: Archive axes: F*'s critical, structural features, best MI x stability first, at most
    #: this many (3 keeps a readable grid; a CVT is used only above cvt_above_dims).
    max_dims: int = 3
    #: Pattern axes: at most this many of the pattern features discovery keeps, highest
    #: within-task MI first. Two axes give tens of bins per task (6 x 5 at most), a number a
    #: campaign can fill and a reader can check; every added axis multiplies the bins a task
    #: must reach (five kept axes give 1800), so SCov could only fall, never be closed.
    max_pattern_axes: int = Field(2, ge=1)
    #: Features kept in F* by fewer than this fraction of the resamples do not span the
    #: archive (a bin axis must not depend on which programs happened to be sampled).
    min_stability: float = 0.6


class LLMSettings(BaseModel):
    """An optional OpenAI-compatible endpoint (vLLM serving the policy, or any model)."""

    base_url: str | None = None
    model: str = "default"
    timeout_s: float = 120.0
    max_retries: int = 3


class Settings(BaseSettings):
    """The whole settings tree."""

    model_config = SettingsConfigDict(env_prefix="STRUCTCOVER_", env_nested_delimiter="__",
                                      extra="forbid")

    state_dir: Path = Path("runs/default")
    compiler: CompilerSettings = Field(default_factory=CompilerSettings)
    features: FeatureSettings = Field(default_factory=FeatureSettings)
    verify: VerifySettings = Field(default_factory=VerifySettings)
    discovery: DiscoverySettings = Field(default_factory=DiscoverySettings)
    archive: ArchiveSettings = Field(default_factory=ArchiveSettings)
    llm: LLMSettings = Field(default_factory=LLMSettings)

    @classmethod
    def settings_customise_sources(cls, settings_cls: type[BaseSettings],
                                   init_settings: PydanticBaseSettingsSource,
                                   env_settings: PydanticBaseSettingsSource,
                                   dotenv_settings: PydanticBaseSettingsSource,
                                   file_secret_settings: PydanticBaseSettingsSource,
                                   ) -> tuple[PydanticBaseSettingsSource, ...]:
        # Environment first so it overrides values passed from the YAML file.
        return env_settings, init_settings

    @property
    def llm_api_key(self) -> SecretStr | None:
        """The LLM key, from ``STRUCTCOVER_LLM_API_KEY`` or ``OPENAI_API_KEY`` only."""
        key = os.environ.get("STRUCTCOVER_LLM_API_KEY") or os.environ.get("OPENAI_API_KEY")
        return SecretStr(key) if key else None


def load_settings(path: Path | None = None) -> Settings:
    """Load settings from a YAML file (optional) with environment overrides.

    Args:
        path: A YAML file; ``STRUCTCOVER_CONFIG`` names one when this is None.

    Returns:
        The validated settings tree.

    Raises:
        ValueError: The file is not a YAML mapping or holds a secret.
    """
    path = path or (Path(os.environ["STRUCTCOVER_CONFIG"]) if os.environ.get("STRUCTCOVER_CONFIG")
                    else None)
    data: dict[str, Any] = {}
    if path is not None:
        loaded = yaml.safe_load(Path(path).read_text()) or {}
        if not isinstance(loaded, dict):
            raise ValueError(f"{path}: settings must be a YAML mapping")
        if "api_key" in (loaded.get("llm") or {}):
            raise ValueError(f"{path}: llm.api_key must come from the environment, not a file")
        data = loaded
    return Settings(**data)
