"""The daemon's services: sessions, settings, jobs, compaction and navigation.

No pygls here: the handlers (``pi_sessiond.handlers``) translate JSON-RPC to
these calls, and these talk back to the client only through the small
protocols in :mod:`pi_sessiond.service.interface`.
"""
