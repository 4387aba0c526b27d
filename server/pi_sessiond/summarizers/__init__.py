"""Summarizers: the offline default and real LLM providers, behind one Protocol."""
