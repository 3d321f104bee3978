"""LangGraph graphs that wire the agents: built in a later stage."""
