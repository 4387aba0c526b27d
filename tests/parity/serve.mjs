// The request loop both oracles share: one JSON request per stdin line, one JSON reply per line.
//
// A request is {"op": ..., "id"?: ..., ...params}; the reply {"ok": true, "result": ...} or
// {"ok": false, "error": "<message>"}, with the request's "id" echoed. A bad request never ends the process.
import { createInterface } from "node:readline";

async function handle(ops, line) {
  let req;
  try {
    req = JSON.parse(line);
    if (req === null || typeof req !== "object") throw new Error("request must be a JSON object");
    const op = ops[req.op];
    if (!op) throw new Error(`unknown op: ${req.op}`);
    return { ...("id" in req ? { id: req.id } : {}), ok: true, result: (await op(req)) ?? null };
  } catch (err) {
    const error = err instanceof Error ? err.message : String(err);
    return { ...(req && typeof req === "object" && "id" in req ? { id: req.id } : {}), ok: false, error };
  }
}

function reply(obj) {
  let text;
  try {
    text = JSON.stringify(obj);
  } catch (err) {
    text = JSON.stringify({ ok: false, error: `unserializable result: ${err.message}` });
  }
  process.stdout.write(`${text}\n`);
}

/** Answer `ops` requests from stdin until it closes; `cleanup` runs when the process exits. */
export async function serve(ops, cleanup) {
  process.on("exit", cleanup);
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (line.trim()) reply(await handle(ops, line));
  }
}
