"""Give a prepared campaign its LLM policies when an endpoint is configured (``--llm URL``
or ``llm.base_url`` in the settings file); without one the campaign stays offline."""

from __future__ import annotations

from typing import Any


def attach_llm(prep: Any, options: Any, settings: Any) -> None:
    """Swap the Synthesizer (and the Diagnoser's ordering) for their LLM policies, each
    wrapping the offline policy it falls back to; ``prep.llm`` keeps the client for the
    summary.

    Raises:
        ValueError: A bad URL, or langchain-openai missing (install the ``agents`` extra).
    """
    from structcover.agents.llm import LLMClient, resolve_config

    config = resolve_config(getattr(options, "llm_url", None),
                            getattr(options, "llm_model", None), settings=settings)
    if config is None:
        return
    try:
        client = LLMClient.connect(config)
    except ImportError as exc:
        raise ValueError(f"--llm needs langchain-openai ({exc}); "
                         "pip install 'structcover[agents]'") from exc
    from structcover.agents.llm_diagnoser import LLMDiagnosisPolicy
    from structcover.agents.llm_synthesizer import LLMSynthesizer
    from structcover.tools.data.corpus import load_corpus
    from structcover.tools.kernelbench.for_bin import kernelbench_only

    ctx = prep.context
    # The corpus's tasks and the campaign's KernelBench problems: the model is prompted for both.
    specs = {t.task_id: t for f in load_corpus() for t in f.tasks} | kernelbench_only(
        getattr(ctx.tools.verify, "specs", None))
    ctx.synthesizer = LLMSynthesizer(client, offline=ctx.synthesizer, specs=specs)
    ctx.diagnoser.policy = LLMDiagnosisPolicy(client, offline=ctx.diagnoser.policy)
    prep.llm = client
