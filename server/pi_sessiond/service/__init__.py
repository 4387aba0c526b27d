"""The daemon's services, one room per job: sessions, compacting, navigation, masking, reads.

No pygls here: the JSON-RPC layer (:mod:`pi_sessiond.rpc.methods`) calls the
:class:`~pi_sessiond.service.daemon.Daemon` method that ``HANDLERS`` binds to
each row of the method table. Each request's session and settings are resolved
once into a :class:`~pi_sessiond.service.sessions.scope.Scope`; the rooms take
it and talk back to the client only through the small protocols in
:mod:`pi_sessiond.service.interface`. The map is ``docs/architecture.md``.
"""
