"""The planted-fact fidelity suite: how many planted facts a summary keeps.

``heldout`` loads the held-out phrasings (``data/heldout.toml``), ``material``
holds the generator's own filler vocabulary, ``sessions`` writes Pi v3 session
files with planted facts, ``runner`` compacts them as a user would (the real
``pi-sessiond`` command line and daemon), ``score`` string-matches the written
entries, ``longrun`` compacts one session 46 times and reads what each summary
says (repeats, superseded marks, silent drops, duplicates, size). Nothing here
imports or reads ``pi_sessiond.summarizers``: the suite measures the extractor,
it must not share its vocabulary.
"""
