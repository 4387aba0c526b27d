"""JSON-RPC glue between pygls and the services.

``server`` (:class:`~pi_sessiond.rpc.server.PiServer`: one connection's pygls
server and lifecycle), ``protocol`` (pygls protocol subclass: orjson output,
batches, leak fixes, LSP exit codes), ``jsonrpc`` (message checks, error
replies, batches), ``methods`` (one handler per row of
:data:`pi_protocol.methods.METHODS`, calling the ``Daemon`` method
``HANDLERS`` binds to it), ``errors`` (exceptions -> JSON-RPC errors),
``deferred`` (the daemon created after the ``initialize`` reply),
``codecache`` (the code attrs and cattrs generate, kept across starts),
``glue`` (the :mod:`pi_sessiond.service.interface` implementations: events,
hooks, progress) and ``debug`` (test-only methods, off unless
``PI_SESSIOND_DEBUG_METHODS=1``). Nothing outside this package touches pygls
internals.
"""
