"""The vocabulary of the example generator: a small fake TypeScript API project.

Everything here is constant data plus pure text builders that take a
``random.Random``; all randomness comes from the caller's seeded generator, so
the same draws give the same text.  Nothing here knows about entries or ids.
The tool calls of a turn and their results are :mod:`~pi_sessiond.examples.toolcalls`.
"""

from __future__ import annotations

import random
from typing import NamedTuple

from pi_sessiond.compaction.fileops import format_file_operations


class Task(NamedTuple):
    """One coding request a user makes in a turn."""

    prompt: str
    goal: str
    done: str
    file: str
    test: str
    symbol: str
    decision: str


TASKS: tuple[Task, ...] = (
    Task(
        "`POST /users` accepts duplicate emails. Make it return 409 when the email is already "
        "taken and add a test for it.",
        "Reject duplicate emails in `POST /users` with 409",
        "`createUser` returns 409 `email_taken` on duplicates",
        "src/routes/users.ts", "tests/users.test.ts", "createUser",
        "**409 instead of 400**: the payload is valid, the state conflicts",
    ),
    Task(
        "The invoice totals are off by a cent sometimes. Can you look at `computeTotal` in the "
        "billing service? I suspect float rounding.",
        "Fix cent rounding errors in `computeTotal`",
        "`computeTotal` sums integer cents, rounds once at the end",
        "src/services/billing.ts", "tests/billing.test.ts", "computeTotal",
        "**Integer cents everywhere**: no float arithmetic on money",
    ),
    Task(
        "add pagination to GET /orders (limit + cursor). default limit 50, max 200",
        "Cursor pagination for `GET /orders`",
        "`listOrders` takes `limit`/`cursor`, returns `nextCursor`",
        "src/routes/orders.ts", "tests/orders.test.ts", "listOrders",
        "**Opaque base64 cursor** over `(created_at, id)` so ties are stable",
    ),
    Task(
        "The auth middleware crashes with a 500 when the Authorization header has no space in "
        "it. Should be a 401.",
        "401 instead of 500 for malformed Authorization headers",
        "`requireAuth` rejects malformed headers with 401",
        "src/middleware/auth.ts", "tests/auth.test.ts", "requireAuth",
        "**Parse, don't split**: a regex match instead of `split(' ')[1]`",
    ),
    Task(
        "We leak db connections when a query throws inside `withTransaction`. Please fix and "
        "make sure the client is always released.",
        "Always release the pool client in `withTransaction`",
        "`withTransaction` releases the client in `finally`, rolls back on error",
        "src/db/pool.ts", "tests/pool.test.ts", "withTransaction",
        "**`finally` owns the release**; rollback errors are logged, not thrown",
    ),
    Task(
        "Config loading should fail fast with a readable message when DATABASE_URL is missing "
        "instead of failing on the first query.",
        "Fail fast on missing `DATABASE_URL`",
        "`loadConfig` throws `ConfigError` naming every missing variable",
        "src/config.ts", "tests/config.test.ts", "loadConfig",
        "**Collect all missing vars** before throwing, one error message",
    ),
    Task(
        "Refactor `validateBody` so it returns typed errors (field + message) instead of a "
        "single string. The routes should send them as `{errors: [...]}`.",
        "Typed validation errors from `validateBody`",
        "`validateBody` returns `FieldError[]`; routes send `{errors}`",
        "src/lib/validate.ts", "tests/validate.test.ts", "validateBody",
        "**Keep the old string** in `message` for the web client until it migrates",
    ),
    Task(
        "rate limiting on /auth/login please, 5 attempts per minute per IP, in memory is fine "
        "for now",
        "Rate-limit `POST /auth/login` (5/min/IP)",
        "`loginLimiter` sliding window, 429 with `Retry-After`",
        "src/middleware/rateLimit.ts", "tests/rateLimit.test.ts", "loginLimiter",
        "**In-memory sliding window**; Redis later behind the same interface",
    ),
    Task(
        "`/health` says ok even when postgres is down. Check the db too and return 503 then.",
        "`GET /health` reports database outages", "`healthCheck` runs `SELECT 1` with a 1s timeout",
        "src/routes/health.ts", "tests/health.test.ts", "healthCheck",
        "**1s timeout on the probe** so the load balancer never hangs",
    ),
    Task(
        "our request logger prints the whole body including passwords!! redact password and "
        "token fields please",
        "Redact secrets in request logs", "`redact` masks `password`/`token` at any depth",
        "src/lib/logger.ts", "tests/logger.test.ts", "redact",
        "**Redact by key name, recursively**; values become `[redacted]`",
    ),
    Task(
        "Webhook signatures are compared with `===`. Switch to a constant-time comparison.",
        "Constant-time webhook signature check", "`verifySignature` uses `timingSafeEqual`",
        "src/routes/webhooks.ts", "tests/webhooks.test.ts", "verifySignature",
        "**Compare equal-length buffers** and reject length mismatches first",
    ),
    Task(
        "Add a --dry-run flag to the migration runner that prints the SQL it would run.",
        "`--dry-run` for migrations", "`runMigrations({dryRun})` prints pending SQL, no writes",
        "src/db/migrate.ts", "tests/migrate.test.ts", "runMigrations",
        "**Dry run still takes the advisory lock** so output matches a real run",
    ),
)

RETRY = "Let's go back and try a different approach, keep the diff minimal. "

FOLLOW_UPS: tuple[str, ...] = (
    "looks good. also run the linter please",
    "can you double check the error path? I think it still returns 500 there",
    "nice. commit it with a sensible message",
    "hmm, the test name is misleading, rename it",
    "wait, don't change the public signature, callers in the web app depend on it",
    "ok now update the README section about this",
    "why did you change the import order? revert that part",
    "run the whole suite once more, CI was flaky earlier",
)

PROJECT_FILES: tuple[str, ...] = (
    *(t.file for t in TASKS), "src/app.ts", "src/server.ts", "src/lib/logger.ts", "package.json",
)

IMPORTS = (
    'import type { Request, Response, NextFunction } from "express";\n'
    'import { pool, withTransaction } from "../db/pool";\n'
    'import { logger } from "../lib/logger";\n'
    'import { validateBody, type FieldError } from "../lib/validate";\n\n'
)

SNIPPETS: tuple[str, ...] = (
    "export async function createUser(req: Request, res: Response): Promise<void> {\n"
    "\tconst errors = validateBody(req.body, userSchema);\n"
    "\tif (errors.length > 0) {\n"
    "\t\tres.status(400).json({ errors });\n\t\treturn;\n\t}\n"
    "\tconst { email, name } = req.body as NewUser;\n"
    "\tconst user = await withTransaction(async (tx) => {\n"
    '\t\tconst { rows } = await tx.query("INSERT INTO users (email, name) VALUES ($1, $2) '
    'RETURNING *", [email, name]);\n'
    "\t\treturn rows[0] as User;\n\t});\n"
    "\tres.status(201).json(user);\n}\n",
    "export function computeTotal(lines: InvoiceLine[], taxRate: number): number {\n"
    "\tlet total = 0;\n\tfor (const line of lines) {\n"
    "\t\ttotal += line.unitPrice * line.quantity;\n\t}\n"
    "\treturn Math.round(total * (1 + taxRate) * 100) / 100;\n}\n",
    "export async function listOrders(req: Request, res: Response): Promise<void> {\n"
    "\tconst limit = Math.min(Number(req.query.limit ?? 50), 200);\n"
    "\tconst { rows } = await pool.query(\n"
    '\t\t"SELECT * FROM orders WHERE customer_id = $1 ORDER BY created_at DESC LIMIT $2",\n'
    "\t\t[req.user.id, limit],\n\t);\n"
    "\tres.json({ orders: rows });\n}\n",
    "export function requireAuth(req: Request, res: Response, next: NextFunction): void {\n"
    '\tconst header = req.headers.authorization ?? "";\n'
    '\tconst token = header.split(" ")[1];\n'
    "\tconst claims = verifyToken(token);\n"
    "\tif (!claims) {\n\t\tres.status(401).json({ error: \"unauthorized\" });\n\t\treturn;\n\t}\n"
    "\treq.user = { id: claims.sub, roles: claims.roles };\n\tnext();\n}\n",
    "export async function withTransaction<T>(fn: (tx: PoolClient) => Promise<T>): Promise<T> {\n"
    "\tconst client = await pool.connect();\n"
    '\tawait client.query("BEGIN");\n'
    "\tconst result = await fn(client);\n"
    '\tawait client.query("COMMIT");\n'
    "\tclient.release();\n\treturn result;\n}\n",
    "export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {\n"
    "\treturn {\n\t\tport: Number(env.PORT ?? 3000),\n"
    "\t\tdatabaseUrl: env.DATABASE_URL as string,\n"
    '\t\tlogLevel: (env.LOG_LEVEL ?? "info") as LogLevel,\n\t};\n}\n',
    "export function validateBody(body: unknown, schema: Schema): FieldError[] {\n"
    "\tconst errors: FieldError[] = [];\n"
    "\tfor (const [field, rule] of Object.entries(schema)) {\n"
    "\t\tconst value = (body as Record<string, unknown>)[field];\n"
    "\t\tif (rule.required && value === undefined) {\n"
    '\t\t\terrors.push({ field, message: `${field} is required` });\n\t\t}\n\t}\n'
    "\treturn errors;\n}\n",
    "const attempts = new Map<string, number[]>();\n\n"
    "export function loginLimiter(req: Request, res: Response, next: NextFunction): void {\n"
    "\tconst now = Date.now();\n"
    "\tconst recent = (attempts.get(req.ip) ?? []).filter((t) => now - t < 60_000);\n"
    "\tif (recent.length >= 5) {\n"
    '\t\tres.status(429).set("Retry-After", "60").json({ error: "too_many_attempts" });\n'
    "\t\treturn;\n\t}\n"
    "\tattempts.set(req.ip, [...recent, now]);\n\tnext();\n}\n",
)

TEST_SNIPPET = (
    'import {{ describe, expect, it }} from "vitest";\nimport request from "supertest";\n'
    'import {{ app }} from "../src/app";\n\n'
    'describe("{symbol}", () => {{\n'
    '\tit("rejects the bad case", async () => {{\n'
    '\t\tconst res = await request(app).post("/users").send({{ email: "a@b.co" }});\n'
    "\t\texpect(res.status).toBe({status});\n\t}});\n}});\n"
)

EDITS: tuple[tuple[str, str], ...] = (
    ('\tconst token = header.split(" ")[1];\n',
     "\tconst match = /^Bearer\\s+(\\S+)$/.exec(header);\n"
     "\tif (!match) {\n\t\tres.status(401).json({ error: \"unauthorized\" });\n"
     "\t\treturn;\n\t}\n\tconst token = match[1];\n"),
    ("\t\ttotal += line.unitPrice * line.quantity;\n",
     "\t\ttotal += line.unitPriceCents * line.quantity;\n"),
    ("\tconst result = await fn(client);\n"
     '\tawait client.query("COMMIT");\n\tclient.release();\n\treturn result;\n',
     "\ttry {\n\t\tconst result = await fn(client);\n"
     '\t\tawait client.query("COMMIT");\n\t\treturn result;\n\t} catch (err) {\n'
     '\t\tawait client.query("ROLLBACK").catch((e) => logger.warn({ e }, "rollback failed"));\n'
     "\t\tthrow err;\n\t} finally {\n\t\tclient.release();\n\t}\n"),
    ("\tconst limit = Math.min(Number(req.query.limit ?? 50), 200);\n",
     "\tconst limit = clamp(Number(req.query.limit ?? 50), 1, 200);\n"
     "\tconst cursor = decodeCursor(req.query.cursor);\n"),
    ('\t\tdatabaseUrl: env.DATABASE_URL as string,\n',
     "\t\tdatabaseUrl: required(env, \"DATABASE_URL\"),\n"),
    ("\tres.status(201).json(user);\n",
     "\tlogger.info({ userId: user.id }, \"user created\");\n\tres.status(201).json(user);\n"),
)

BASH: tuple[tuple[str, str], ...] = (
    ("npm test -- {test}",
     "\n> acme-api@1.4.0 test\n> vitest run {test}\n\n RUN  v1.6.0 /home/dev/projects/acme-api\n\n"
     " ✓ {test} ({n} tests) {ms}ms\n\n Test Files  1 passed (1)\n      Tests  {n} passed ({n})\n"),
    ("npx tsc --noEmit", "(no output)"),
    ("git status --short", " M {file}\n M {test}\n"),
    ("git diff --stat", " {file} | {n} +++++++---\n {test} | 12 ++++++\n 2 files changed\n"),
    ("rg -n \"{symbol}\" src tests",
     "{file}:{n}:export async function {symbol}(\ntests/{symbol}.test.ts:3:import {{ {symbol} }} "
     "from \"../{file}\";\nsrc/app.ts:{ms}:app.use({symbol});\n"),
    ("npm run lint", "\n> acme-api@1.4.0 lint\n> biome check src tests\n\nChecked {n} files in "
     "{ms}ms. No fixes applied.\n"),
    ("ls src/routes src/services",
     "src/routes:\norders.ts\nusers.ts\n\nsrc/services:\nbilling.ts\n"),
)

BASH_FAILURE = (
    "\n> acme-api@1.4.0 test\n> vitest run {test}\n\n ❯ {test} ({n} tests | 1 failed) {ms}ms\n"
    "   × {symbol} > rejects the bad case\n     → expected 500 to be 409\n\n"
    " Test Files  1 failed (1)\n      Tests  1 failed | {n} passed\n\n\nCommand exited with code 1"
)

OPENERS = (
    "Let me look at the current implementation first.",
    "I'll check how this is wired up before changing anything.",
)

PREFACES = (
    "Now let me run the tests to see where we are.",
    "The test fails as expected. Fixing the handler:",
    "That edit didn't apply, the whitespace differs. Let me re-read the file.",
    "Good, now the type check:",
)

THOUGHTS = (
    "Task: {goal}. The relevant code is `{symbol}` in {file}. I should read it before "
    "editing, then add a regression test in {test} and run only that file.",
    "`{symbol}` doesn't handle the failure path. If I wrap it I must keep the signature, other "
    "modules import it. The test should assert the status code, not the message text.",
    "Before touching {file} let me think about what else calls `{symbol}`. A quick grep will "
    "tell me; changing behaviour silently could break the web client.",
)

FINALS = (
    "Done. `{symbol}` in `{file}` now handles it: {done}. I added a regression test in `{test}` "
    "and the suite passes.\n\nSummary of changes:\n- `{file}`: {done}\n- `{test}`: new test",
    "Fixed: {done}.\n\nThe root cause was in `{symbol}`. Tests and type check pass. One thing to "
    "watch: callers that relied on the old behaviour will now see the new status code.",
)


def fill(template: str, task: Task, rng: random.Random) -> str:
    """Fill ``{goal}``-style placeholders of a template from the task and the RNG."""
    return template.format(
        goal=task.goal, done=task.done, file=task.file, test=task.test, symbol=task.symbol,
        n=rng.randint(3, 48), ms=rng.randint(40, 2400), status=409,
    )


def bullets(items: list[str], mark: str) -> str:
    """Markdown list lines, or ``(none)``."""
    return "\n".join(f"- {mark}{item}" for item in items) if items else "- (none)"


def compaction_summary(done: list[Task], current: Task, files: tuple[list[str], list[str]]) -> str:
    """A structured checkpoint summary in the format of Pi's ``SUMMARIZATION_PROMPT``."""
    goals = "\n".join(f"- {t.goal}" for t in [*done, current])
    return (
        f"## Goal\n{goals}\n\n## Constraints & Preferences\n"
        "- Keep public function signatures stable (the web client imports them)\n"
        "- Run only the affected test file before the full suite\n\n"
        f"## Progress\n### Done\n{bullets([t.done for t in done], '[x] ')}\n\n"
        f"### In Progress\n- [ ] {current.goal}\n\n### Blocked\n- (none)\n\n"
        f"## Key Decisions\n{bullets([t.decision for t in [*done, current]], '')}\n\n"
        f"## Next Steps\n1. Finish `{current.symbol}` in `{current.file}`\n"
        f"2. Add a regression test to `{current.test}`\n3. Run `npm test` and `npm run lint`\n\n"
        f"## Critical Context\n- Test command: `npm test -- {current.test}`"
        + format_file_operations(*files)
    )


def branch_summary(task: Task, files: tuple[list[str], list[str]]) -> str:
    """A branch summary as Pi's ``generateBranchSummary`` stores it (preamble included)."""
    return (
        "The user explored a different conversation branch before returning here.\n"
        "Summary of that exploration:\n\n"
        f"## Goal\n{task.goal}\n\n## Constraints & Preferences\n- (none)\n\n"
        f"## Progress\n### Done\n- [x] Read `{task.file}`\n\n### In Progress\n"
        f"- [ ] {task.done}\n\n### Blocked\n- Approach abandoned; the user went back\n\n"
        f"## Key Decisions\n- {task.decision}\n\n## Next Steps\n1. Try a smaller change first"
        + format_file_operations(*files)
    )


LABELS = ("checkpoint", "before-refactor", "tests green", "good state ✅", "try-2")

SESSION_NAMES = ("acme-api: auth + billing fixes", "Pagination & rate limits", "Bug bash")

# A 1x1 transparent PNG.
PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

UNICODE_TEXT = (
    "Deploy 🚀 to 東京 (ap-northeast-1), then ping Zoë and José — naïve café, "
    "e\u0301 vs é, 👩🏽\u200d💻, עברית, Ελληνικά, 🇯🇵"
)


def exactly_2000_units() -> str:
    """2000 UTF-16 units whose last two units are the 🚀 surrogate pair."""
    return "x" * 1998 + "🚀"


def split_at_2000() -> str:
    """2001+ units where unit 2000 is the low half of 🚀: a naive 2000-unit cut splits the pair."""
    return "y" * 1999 + "🚀" + " tail 東京"
