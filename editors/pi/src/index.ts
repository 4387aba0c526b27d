// pi-sessiond for Pi: while Pi has a session open, this extension holds the session's lock (so
// daemons and the CLI refuse to write beside Pi and say who holds it), hands Pi's compactions and
// branch summaries to a pi-sessiond daemon (its summarizer settings, fidelity gate and masking; Pi
// still writes the entry) and runs the `pi/compact` requests editors send for this session.
// When the daemon is missing or fails, Pi's own summarizer runs and the user is told once.

import { DaemonLink } from "./daemon.js";
import { cancelled, ForwardingServer } from "./forward.js";
import { HeldLock } from "./lock.js";
import { forwardingSocket, sessiondCommand } from "./paths.js";
import type { BeforeCompactAnswer, BeforeTreeAnswer, Context, ExtensionAPI, JsonObject } from "./pi-api.js";
import { RpcError } from "./rpc.js";

interface Forwarded {
  forRequest?: string;
  signal: AbortSignal;
}

interface Live {
  file: string;
  lock?: HeldLock;
  server?: ForwardingServer;
  ctx: Context;
}

export default function piSessiond(pi: ExtensionAPI): void {
  const command = sessiondCommand();
  const daemon = new DaemonLink(command);
  let live: Live | undefined;
  let forwarded: Forwarded | undefined;
  let warned = false;

  const warnOnce = (ctx: Context, message: string) => {
    if (warned) return;
    warned = true;
    ctx.ui.notify(`pi-sessiond: ${message}`, "warning");
  };

  const compactInPi = (params: { customInstructions?: string; forRequest?: string }, signal: AbortSignal) =>
    new Promise<unknown>((resolve, reject) => {
      const current = live;
      if (!current) return reject(new RpcError("Pi has no session open", -32001, { reason: "unknownSession" }));
      forwarded = { signal, ...(params.forRequest ? { forRequest: params.forRequest } : {}) };
      const done = () => {
        forwarded = undefined;
      };
      current.ctx.compact({
        ...(params.customInstructions ? { customInstructions: params.customInstructions } : {}),
        onComplete: (result) => {
          done();
          resolve({ entry: current.ctx.sessionManager.getLeafEntry() ?? null, tokensBefore: result.tokensBefore });
        },
        onError: (error) => {
          done();
          reject(signal.aborted ? cancelled() : failure(error));
        },
      });
    });

  pi.on("session_start", async (_event, ctx) => {
    const file = ctx.sessionManager.getSessionFile();
    if (!file) return; // an in-memory session: nothing to hold
    const current: Live = { file, ctx };
    live = current;
    const socket = forwardingSocket(file);
    try {
      current.server = await ForwardingServer.listen(socket, compactInPi);
    } catch (error) {
      warnOnce(ctx, `cannot accept editors' requests (${message(error)})`);
    }
    try {
      current.lock = await HeldLock.take(command, file, socket);
    } catch (error) {
      warnOnce(ctx, `the session's lock is not held (${message(error)})`);
    }
  });

  pi.on("session_shutdown", async () => {
    live?.lock?.release();
    live?.server?.close();
    live = undefined;
    daemon.close();
  });

  pi.on("session_before_compact", async (event, ctx): Promise<BeforeCompactAnswer | undefined> => {
    if (live) live.ctx = ctx;
    const file = ctx.sessionManager.getSessionFile();
    const asked = forwarded;
    if (asked?.signal.aborted) return { cancel: true };
    if (!file) return undefined;
    const signal = asked ? AbortSignal.any([event.signal, asked.signal]) : event.signal;
    try {
      const compaction = await daemon.compaction(file, { ...event, signal }, asked?.forRequest);
      return signal.aborted ? { cancel: true } : { compaction };
    } catch (error) {
      if (asked?.signal.aborted || event.signal.aborted) return { cancel: true };
      warnOnce(ctx, `the daemon could not summarize (${message(error)}); Pi's own summarizer runs`);
      return undefined;
    }
  });

  pi.on("session_before_tree", async (event, ctx): Promise<BeforeTreeAnswer | undefined> => {
    const file = ctx.sessionManager.getSessionFile();
    if (!file || !event.preparation.userWantsSummary || event.preparation.entriesToSummarize.length === 0) {
      return undefined;
    }
    try {
      const draft = await daemon.branch(file, event.preparation, event.signal);
      const usage = draft.usage as JsonObject | undefined;
      return { summary: { summary: draft.summary, details: draft.details, ...(usage ? { usage } : {}) } };
    } catch (error) {
      if (event.signal.aborted) return { cancel: true };
      warnOnce(ctx, `the daemon could not summarize (${message(error)}); Pi's own summarizer runs`);
      return undefined;
    }
  });
}

function message(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

function failure(error: Error): RpcError {
  const text = error.message;
  if (/nothing to compact|already compacted/i.test(text)) {
    return new RpcError(text, -32004, { reason: "nothingToCompact" });
  }
  return new RpcError(text, -32005, { reason: "summarizerFailed" });
}
