"""The open sessions: the registry, tail-first loading, the live-Pi watch, idle write locks."""
