"""The daemon's services: sessions, settings, jobs, compaction and navigation.

No pygls here: the JSON-RPC layer (:mod:`pi_sessiond.rpc.methods`) calls the
:class:`~pi_sessiond.service.daemon.Daemon` method each row of the method
table names, and these talk back to the client only through the small
protocols in :mod:`pi_sessiond.service.interface`.
"""
