"""The campaign: one round of gap filling, from rollouts to the next round's curated data.

``runner`` runs the LangGraph campaign (``graphs/campaign.py``) and summarizes it; ``prepare``
builds what it needs before the graph runs; ``toolbox`` and ``bindings`` bind the agents'
tool ports to the real tools; ``mutate`` is the mutation port; ``export`` writes the round's
outputs. The public entry points are re-exported here.
"""

from structcover.campaign.runner import CampaignOptions, CampaignResult, result_json, run_campaign

__all__ = ["CampaignOptions", "CampaignResult", "result_json", "run_campaign"]
