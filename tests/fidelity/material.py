"""The generator's own filler vocabulary: chatter, goals, identifiers, files, code and log noise.

Invariant: nothing here contains a ``match`` string of the held-out list (the
suite's self-test checks that every planted needle occurs only where it was
planted), so a summary can only score by carrying the planted message.
"""

from __future__ import annotations

from random import Random

CWD = "/home/dev/work/ledger-svc"

# The goal message opens a session; (text, match) per language.
GOALS = {
    "en": ("Goal for this whole session: move the invoice exporter from the nightly cron script to the "
           "job queue, without changing what customers receive.",
           "move the invoice exporter from the nightly cron script to the job queue"),
    "de": ("Ziel dieser ganzen Sitzung: den Rechnungsexport vom nächtlichen Cron-Skript auf die Job-Queue "
           "umstellen, ohne dass sich für die Kunden etwas ändert.",
           "Rechnungsexport vom nächtlichen Cron-Skript auf die Job-Queue umstellen"),
    "es": ("Objetivo de toda la sesión: pasar el exportador de facturas del cron nocturno a la cola de "
           "trabajos, sin que cambie lo que reciben los clientes.",
           "exportador de facturas del cron nocturno a la cola de trabajos"),
    "ja": ("このセッション全体の目標：請求書エクスポートを夜間のcronスクリプトからジョブキューに移行することです。"
           "お客様に届く内容は変えないでください。",
           "請求書エクスポートを夜間のcronスクリプトからジョブキューに移行"),
    "fr": ("Objectif de toute la session : faire passer l'export des factures du cron de nuit à la file de "
           "tâches, sans rien changer pour les clients.",
           "export des factures du cron de nuit à la file de tâches"),
}

# Neutral connective text a user writes around constraints and requests (no rules, no asks).
CHATTER = {
    "en": ["Thanks, that looks right so far.", "Some context from the team sync this morning.",
           "Here is the output I got on staging:", "A few things to keep in mind for this part.",
           "I checked the dashboard after your change."],
    "de": ["Danke, das sieht soweit gut aus.", "Etwas Kontext aus der Teamrunde heute früh.",
           "Hier die Ausgabe von Staging:", "Ein paar Punkte für diesen Teil.",
           "Ich habe nach deiner Änderung ins Dashboard geschaut."],
    "es": ["Gracias, hasta aquí se ve bien.", "Algo de contexto de la reunión de esta mañana.",
           "Esto es lo que salió en staging:", "Unas cuantas cosas para esta parte.",
           "Revisé el panel después de tu cambio."],
    "ja": ["ありがとうございます、ここまでは良さそうです。", "今朝のチームの打ち合わせからの補足です。",
           "ステージングでの出力はこちらです：", "この部分についていくつか補足します。",
           "変更のあとでダッシュボードを確認しました。"],
    "fr": ["Merci, jusqu'ici ça me paraît bon.", "Un peu de contexte de la réunion de ce matin.",
           "Voici ce que j'ai obtenu en staging :", "Quelques points pour cette partie.",
           "J'ai regardé le tableau de bord après ta modification."],
}

# A user's short follow-up asks (numbered, so each one is unique in a session).
FOLLOW_UPS = {
    "en": "Go on with step {n} of the plan.",
    "de": "Mach mit Schritt {n} des Plans weiter.",
    "es": "Sigue con el paso {n} del plan.",
    "ja": "計画のステップ{n}に進んでください。",
    "fr": "Passe à l'étape {n} du plan.",
}

IDENTIFIERS = [
    "BILL-4821", "LedgerWindow.flush_pending", "LEDGER_SYNC_WINDOW_SECONDS", "inv_2025_10_000417",
    "export_jobs_v3", "ReconcileCursor", "9c41e7b2", "acct_ZX81Q4", "queue.invoices.priority",
    "tenant_ref_map", "OPS-1177", "settle_partial_refund",
]

TODOS = [
    "update the runbook in docs/runbooks/queue-export.md once the queue name is final",
    "backfill the October invoices for the tenant nordwind-gmbh",
    "ask the data team whether the ledger_snapshots table can be dropped",
    "add an alert when the export queue is older than fifteen minutes",
    "remove the temporary logging in the sync worker before the release",
    "compare one exported file byte for byte against last month's cron output",
    "write the migration note for the support team",
    "re-enable the flaky currency test once the fixture is regenerated",
]

READ_ONLY = [f"src/ledger/{n}.py" for n in (
    "models", "currency", "tenants", "clock", "audit_trail", "fx_tables", "permissions", "schemas")] + [
    "docs/architecture/export-flow.md", "config/queue.example.toml", "tests/conftest.py",
    "src/ledger/legacy/cron_export.py", "scripts/seed_invoices.py", "Makefile", "pyproject.toml"]
MODIFIED = [f"src/ledger/{n}.py" for n in (
    "exporter", "queue_worker", "retry_policy", "csv_writer", "reconcile", "notifications")] + [
    "tests/test_exporter.py", "tests/test_queue_worker.py", "tests/test_csv_writer.py",
    "src/ledger/api/routes.py", "src/ledger/jobs/schedule.py", "docs/queue-export.md"]
BASH_MOVES = [("src/ledger/export_cron.py", "src/ledger/jobs/export_task.py"),
              ("tests/test_cron.py", "tests/jobs/test_export_task.py"),
              ("src/ledger/old_formats.py", "src/ledger/formats/v3.py")]
BASH_SED = ["src/ledger/settings_defaults.py", "deploy/helm/values-staging.yaml", "src/ledger/__init__.py"]
BASH_REDIRECT = ["deploy/queue-topics.txt", "src/ledger/formats/VERSION", "tests/data/expected_header.csv"]
BASH_RM = ["src/ledger/cron_lock.py", "scripts/run_nightly_export.sh", "tests/test_cron_lock.py"]

_VERBS = ("load", "apply", "merge", "split", "render", "collect", "emit", "parse", "build", "check")
_NOUNS = ("rows", "batch", "entries", "totals", "window", "cursor", "lines", "period", "header", "amounts")
_ARGS = ("item", "record", "value", "chunk", "key", "limit", "since", "until")


def code_text(rng: Random, chars: int) -> str:
    """Python-looking source of about ``chars`` characters, with line numbers like Pi's read tool."""
    lines: list[str] = []
    while sum(map(len, lines)) < chars:
        verb, noun, arg = rng.choice(_VERBS), rng.choice(_NOUNS), rng.choice(_ARGS)
        lines += [f"def {verb}_{noun}(self, {arg}):",
                  f'    """{verb.capitalize()} the {noun} for one {arg}."""',
                  f"    found = self._{noun}.get({arg})",
                  "    if found is None:",
                  f"        return self.{rng.choice(_VERBS)}_{rng.choice(_NOUNS)}({arg})",
                  f"    return [x for x in found if x.{rng.choice(_NOUNS)}]", ""]
    return "\n".join(f"{n:>5}\t{line}" for n, line in enumerate(lines, start=rng.randint(1, 300)))


def passing_tests(rng: Random, lines: int) -> str:
    """A green pytest run of ``lines`` progress lines."""
    out = ["============================= test session starts ==============================",
           f"collected {lines * 20} items", ""]
    out += [f"tests/test_{rng.choice(_NOUNS)}_{i}.py " + "." * 20 + f" [{(i + 1) * 100 // lines:>3}%]"
            for i in range(lines)]
    return "\n".join([*out, f"============ {lines * 20} passed in {rng.uniform(2, 40):.2f}s ============"])


def padding(rng: Random, kind: str, lines: int) -> str:
    """Noise of one kind that a real tool prints before the decisive lines."""
    verb, noun, arg = (lambda: rng.choice(_VERBS)), (lambda: rng.choice(_NOUNS)), (lambda: rng.choice(_ARGS))
    make = {
        "traceback-frames": lambda i: (f'  File "/srv/app/ledger/{noun()}.py", line {rng.randint(10, 900)}, '
                                       f"in {verb()}_{noun()}\n    return self.{verb()}_{noun()}({arg()})"),
        "pytest-progress": lambda i: f"tests/test_{noun()}_{i}.py " + "." * 30 + f" [{i:>3}%]",
        "tsc-noise": lambda i: f"[{i:02d}:00:0{i % 10}] File change detected. Checking src/{noun()}/{i}.ts",
        "jest-progress": lambda i: f"PASS src/{noun()}/__tests__/{verb()}{i}.test.ts ({rng.randint(1, 900)} ms)",
        "cargo-compiling": lambda i: f"   Compiling {noun()}-{verb()} v0.{i}.{rng.randint(0, 9)}",
        "cargo-test-progress": lambda i: f"test {noun()}::tests::{verb()}_{i} ... ok",
    }[kind]
    return "\n".join(make(i) for i in range(lines))


# ---------------------------------------------------------------- the soft classes
# Written for the suite, apart from the summarizers: assistant decisions with their reason,
# identifiers named in plain prose, open next steps said in prose or as a numbered plan, and
# preferences the user later reverses. Each item is (text, match…); a match occurs nowhere else.

# (sentence, (the choice, its reason)): both must be kept.
DECISIONS = [
    ("I'll keep the CSV writer synchronous, because the queue worker already runs it in its own thread.",
     ("keep the CSV writer synchronous", "already runs it in its own thread")),
    ("The export cursor goes into Redis rather than the jobs table, since that table is locked during the "
     "nightly vacuum.", ("export cursor goes into Redis", "locked during the nightly vacuum")),
    ("We'll use one queue per tenant: a shared queue would let one large tenant starve the others.",
     ("one queue per tenant", "starve the others")),
    ("I decided to retry only on 5xx responses, as retrying a 4xx would just repeat a request the server "
     "already rejected.", ("retry only on 5xx responses", "the server already rejected")),
    ("Going with write-to-temp-then-rename for the export files so that a crash never leaves a half-written "
     "file behind.", ("write-to-temp-then-rename", "half-written file")),
    ("I chose not to cache the FX rates in memory — they change during the day and a cache would go stale.",
     ("not to cache the FX rates", "a cache would go stale")),
    ("Instead of replacing the cron outright, the new path sits behind a feature flag, which lets us fall "
     "back within minutes.", ("the new path sits behind a feature flag", "fall back within minutes")),
    ("Batches stay at 250 rows because larger ones hit the 30-second statement timeout on the staging "
     "replica.", ("Batches stay at 250 rows", "30-second statement timeout")),
]

# (sentence, identifier): an exact value the work relies on, named without backticks.
SAID_IDS = [
    ("The last good build was commit 4be1c07d, before the serializer change.", "4be1c07d"),
    ("The new timeout lives in EXPORT_QUEUE_TIMEOUT_MS in the settings module.", "EXPORT_QUEUE_TIMEOUT_MS"),
    ("I pinned httpx to 0.27.2 since the next minor release changed the proxy arguments.", "0.27.2"),
    ("The batch size is read from ledger.export.max_batch_rows at start-up.", "ledger.export.max_batch_rows"),
    ("Staging runs the image tag ledger-svc:2025.11.3-rc2 right now.", "ledger-svc:2025.11.3-rc2"),
    ("The failing job was job_7f3a91, and the retry picked it up again.", "job_7f3a91"),
    ("The worker takes the queue name from INVOICE_QUEUE_NAME.", "INVOICE_QUEUE_NAME"),
    ("Migration 0042_add_export_cursor is the last one applied on staging.", "0042_add_export_cursor"),
    ("The lag panel on the dashboard is keyed by export.lag.p95.", "export.lag.p95"),
    ("That regression came in with release 3.18.0 of the payments client.", "3.18.0"),
]

# (text, match): a step still open when the answer ends.
PLANS = [
    ("Next, I'll wire the retry counter into the Grafana export board.",
     "wire the retry counter into the Grafana export board"),
    ("After that, the staging fixtures need regenerating from the October dump.",
     "staging fixtures need regenerating"),
    ("Then I still have to document the rollback switch for the on-call rotation.",
     "document the rollback switch"),
    ("Once this is merged I'll ask ops to raise the worker concurrency to eight.",
     "raise the worker concurrency to eight"),
    ("What is left:\n1. Drain the old cron queue before the switch.\n2. Move the tenants over in three waves.",
     "Move the tenants over in three waves"),
    ("Remaining: compare the row counts of both exporters for a full week.",
     "compare the row counts of both exporters"),
]

# Per language: (earlier text, its match), (later text that reverses it, its match). The earlier
# match occurs in neither the later text nor anywhere else.
PREFERENCES = {
    "en": [(("Use tabs for indentation in the generated fixture files.", "tabs for indentation"),
            ("Actually, use four spaces in the fixture files instead of tabs.", "use four spaces in the fixture"))],
    "de": [(("Die Logausgabe bitte auf Deutsch.", "Logausgabe bitte auf Deutsch"),
            ("Doch lieber die Logausgabe auf Englisch, nicht auf Deutsch.", "Logausgabe auf Englisch"))],
    "es": [(("Prefiero que los nombres de las tablas vayan en singular.", "tablas vayan en singular"),
            ("Mejor en plural: los nombres de las tablas van en plural a partir de ahora.", "tablas van en plural"))],
    "ja": [(("日付は和暦で表示してください。", "和暦で表示"),
            ("やっぱり日付は西暦で表示してください。和暦はやめます。", "西暦で表示"))],
    "fr": [(("Je préfère des fonctions courtes, une par fichier.", "une par fichier"),
            ("Finalement, regroupe les fonctions par module, pas de fichier séparé pour chacune.",
             "regroupe les fonctions par module"))],
}

# What a user says that directs nothing: observations and acknowledgements.
REMARKS = {
    "en": ["I suspect float rounding.", "Great, all green.", "The dashboard looked odd yesterday evening.",
           "I think the staging replica was just slow."],
    "de": ["Ich vermute, es liegt an der Zeitzone.", "Super, alles grün."],
    "es": ["Sospecho que es el redondeo.", "Genial, todo en verde."],
    "ja": ["たぶん丸め誤差だと思います。", "いいですね、全部通りました。"],
    "fr": ["Je soupçonne un problème d'arrondi.", "Super, tout est vert."],
}
