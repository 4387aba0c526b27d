// Where things live, named as the daemon names them: the socket directory, the daemon's socket, a live
// Pi's forwarding socket (a hash of the session's absolute path), and the pi-sessiond command.

import { createHash } from "node:crypto";
import { join, resolve } from "node:path";

/** `$XDG_RUNTIME_DIR/pi-sessiond`, else `/tmp/pi-sessiond-<uid>`. */
export function socketDir(env: NodeJS.ProcessEnv = process.env): string {
  const runtime = env.XDG_RUNTIME_DIR;
  return runtime ? join(runtime, "pi-sessiond") : `/tmp/pi-sessiond-${process.getuid?.() ?? 0}`;
}

/** The running daemon's Unix socket. */
export function daemonSocket(env: NodeJS.ProcessEnv = process.env): string {
  return join(socketDir(env), "daemon.sock");
}

/** Where this Pi accepts requests forwarded by daemons for `sessionFile`. */
export function forwardingSocket(sessionFile: string, env: NodeJS.ProcessEnv = process.env): string {
  const digest = createHash("sha256").update(resolve(sessionFile)).digest("hex").slice(0, 16);
  return join(socketDir(env), `pi-${digest}.sock`);
}

/** The command that runs pi-sessiond: `$PI_SESSIOND_COMMAND` (a JSON array or one word), else `pi-sessiond`. */
export function sessiondCommand(env: NodeJS.ProcessEnv = process.env): string[] {
  const given = env.PI_SESSIOND_COMMAND?.trim();
  if (!given) return ["pi-sessiond"];
  if (given.startsWith("[")) {
    const parsed: unknown = JSON.parse(given);
    if (Array.isArray(parsed) && parsed.length > 0 && parsed.every((p) => typeof p === "string")) return parsed;
    throw new Error("PI_SESSIOND_COMMAND: a JSON array of strings is expected");
  }
  return [given];
}
