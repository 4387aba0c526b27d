"""pi-sessiond: Pi session trees, compaction and branch summaries for any editor or agent."""

__version__ = "0.1.0"
