"""The pipelines that ask a summarizer and write one entry: compaction and navigation.

- :mod:`~pi_sessiond.pipeline.requests`: the one builder of summarizer
  requests (system prompt, prompt text, output limit, purpose, required
  headings) for history, turn prefix and branch summaries; pure.
- :mod:`~pi_sessiond.pipeline.summaries`: runs those jobs (split turns,
  shrinking on context-length errors, heading validation); writes nothing.
- :mod:`~pi_sessiond.pipeline.compaction`: prepare -> summarize -> validate ->
  re-check the leaf -> commit one ``compaction`` entry.
- :mod:`~pi_sessiond.pipeline.navigation`: Pi's ``navigateTree`` with an
  optional ``branch_summary``.

Dependencies point one way: compaction/store/summarizers -> requests ->
summaries -> compaction -> navigation; the daemon's service plugs its hooks
in through the ``supply`` / ``supplied`` / ``review`` parameters. Nothing
here knows about JSON-RPC or the client.
"""
