// The forwarding socket: daemons send `pi/compact` for the session this Pi holds, and Pi runs it
// (`ctx.compact()`), so the compaction is Pi's own and its leaf moves on. JSON-RPC, LSP framing.

import { chmodSync, mkdirSync, rmSync } from "node:fs";
import { createServer, type Server } from "node:net";
import { dirname } from "node:path";
import { Connection, RpcError } from "./rpc.js";

export type ForwardedCompact = (params: { customInstructions?: string; forRequest?: string }, signal: AbortSignal) => Promise<unknown>;

export class ForwardingServer {
  private constructor(
    private readonly server: Server,
    readonly path: string,
  ) {}

  /** Listen on `path` (directory 0700, socket 0600; a stale socket there is replaced). */
  static listen(path: string, compact: ForwardedCompact): Promise<ForwardingServer> {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    chmodSync(dirname(path), 0o700);
    rmSync(path, { force: true });
    const server = createServer((stream) => {
      const connection = new Connection(stream);
      connection.handlers.set("pi/compact", (params, _id, signal) =>
        compact((params ?? {}) as { customInstructions?: string; forRequest?: string }, signal),
      );
    });
    server.unref();
    return new Promise((resolve, reject) => {
      server.once("error", reject);
      server.listen(path, () => {
        chmodSync(path, 0o600);
        resolve(new ForwardingServer(server, path));
      });
    });
  }

  close(): void {
    this.server.close();
    rmSync(this.path, { force: true });
  }
}

export const CANCELLED = -32800;

export function cancelled(): RpcError {
  return new RpcError("the forwarded compaction was cancelled", CANCELLED, { reason: "cancelled" });
}
