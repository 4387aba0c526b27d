"""JSON-RPC glue between pygls and the services.

``protocol`` (pygls protocol subclass: orjson output, batches, leak fixes, LSP
exit codes), ``methods`` (the typed registration helper and the error mapping),
``glue`` (the :mod:`pi_sessiond.service.interface` implementations: events,
hooks, progress) and ``debug`` (test-only methods, off unless
``PI_SESSIOND_DEBUG_METHODS=1``). Nothing outside this package and ``app``
touches pygls internals.
"""
