"""Compaction requests: manual, overflow and automatic; drafts; background preparation; forwarding to a live Pi."""
