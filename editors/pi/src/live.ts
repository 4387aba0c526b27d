// One session Pi has open: its lock, its forwarding socket, and Pi's hooks answered by the daemon
// (compaction and branch summaries; the masking tier at each turn boundary).

import type { DaemonLink } from "./daemon.js";
import { cancelled, type ForwardedCompact, type ForwardingServer } from "./forward.js";
import { HeldLock } from "./lock.js";
import { forwardingSocket } from "./paths.js";
import type {
  BeforeCompactAnswer,
  BeforeCompactEvent,
  BeforeProviderRequestEvent,
  BeforeTreeAnswer,
  BeforeTreeEvent,
  BoundaryAnswer,
  Context,
  ContextEditDraft,
  JsonObject,
  TurnEndEvent,
} from "./pi-api.js";
import { RpcError } from "./rpc.js";

type Listen = (path: string, compact: ForwardedCompact) => Promise<ForwardingServer>;

/** How long Pi's turn boundary waits for the daemon's masking answer. */
export const MASK_DEADLINE_MS = 10_000;

/** A `pi/compact` a daemon forwarded, while Pi runs it: its id for `forRequest` and its cancellation. */
interface Forwarded {
  forRequest?: string;
  signal: AbortSignal;
}

export class LiveSession {
  private ctx: Context | undefined;
  private lock: HeldLock | undefined;
  private server: ForwardingServer | undefined;
  private forwarded: Forwarded | undefined;
  private warned = false;

  constructor(
    private readonly daemon: Pick<DaemonLink, "compaction" | "branch" | "maskingEdits" | "warmUp" | "recordRequest">,
    private readonly maskDeadlineMs = MASK_DEADLINE_MS,
  ) {}

  /** Hold `file`'s lock and accept forwarded requests on its socket (each failure is told once). */
  async start(file: string, ctx: Context, command: string[], listen: Listen): Promise<void> {
    this.ctx = ctx;
    this.daemon.warmUp();
    const socket = forwardingSocket(file);
    try {
      this.server = await listen(socket, (params, signal) => this.compactInPi(params, signal));
    } catch (error) {
      this.warnOnce(ctx, `cannot accept editors' requests (${message(error)})`);
    }
    try {
      this.lock = await HeldLock.take(command, file, socket);
    } catch (error) {
      this.warnOnce(ctx, `the session's lock is not held (${message(error)})`);
    }
  }

  /** Let the session go: the lock is released, the socket closed. */
  stop(): void {
    this.lock?.release();
    this.server?.close();
    this.lock = this.server = this.ctx = undefined;
  }

  /** `session_before_compact`: the daemon's summary, `{cancel}` when a forwarded request was cancelled. */
  async beforeCompact(event: BeforeCompactEvent, ctx: Context): Promise<BeforeCompactAnswer | undefined> {
    this.ctx = ctx;
    const file = ctx.sessionManager.getSessionFile();
    const asked = this.forwarded;
    if (asked?.signal.aborted) return { cancel: true };
    if (!file) return undefined;
    const signal = asked ? AbortSignal.any([event.signal, asked.signal]) : event.signal;
    try {
      const branch = ctx.sessionManager.getBranch().map((entry) => String(entry.id));
      const compaction = await this.daemon.compaction(file, { ...event, signal }, branch, asked?.forRequest);
      return signal.aborted ? { cancel: true } : { compaction };
    } catch (error) {
      if (signal.aborted) return { cancel: true };
      this.warnOnce(ctx, `the daemon could not summarize (${message(error)}); Pi's own summarizer runs`);
      return undefined;
    }
  }

  /** `session_before_tree`: the daemon's branch summary when the user wants one. */
  async beforeTree(event: BeforeTreeEvent, ctx: Context): Promise<BeforeTreeAnswer | undefined> {
    const file = ctx.sessionManager.getSessionFile();
    const prep = event.preparation;
    if (!file || !prep.userWantsSummary || prep.entriesToSummarize.length === 0) return undefined;
    try {
      const draft = await this.daemon.branch(file, prep, event.signal);
      return { summary: { summary: draft.summary, details: draft.details, ...(draft.usage ? { usage: draft.usage } : {}) } };
    } catch (error) {
      if (event.signal.aborted) return { cancel: true };
      this.warnOnce(ctx, `the daemon could not summarize (${message(error)}); Pi's own summarizer runs`);
      return undefined;
    }
  }

  /**
   * `turn_end`: the masking tier through Pi. At the boundary of a completed turn the daemon says which
   * old tool results it masks at Pi's threshold (none unless `compaction.masking.enabled` and the context
   * is past it); they are added to the proposed drafts and Pi appends them to its own file, so its
   * threshold check and next request see the masked context. A daemon that fails or takes longer than
   * `maskDeadlineMs` leaves the turn as it is (Pi then compacts as usual).
   */
  async turnEnd(event: TurnEndEvent, ctx: Context): Promise<BoundaryAnswer | undefined> {
    const file = ctx.sessionManager.getSessionFile();
    if (!file || event.outcome !== "completed") return undefined;
    let edits: ContextEditDraft[] | undefined;
    try {
      edits = await within(this.daemon.maskingEdits(file), this.maskDeadlineMs);
    } catch (error) {
      this.warnOnce(ctx, `the daemon could not mask old tool output (${message(error)})`);
      return undefined;
    }
    const proposed = new Set(event.entries.flatMap((d) => (d.type === "context_edit" ? [d.targetId] : [])));
    const fresh = (edits ?? []).filter((edit) => !proposed.has(edit.targetId));
    return fresh.length > 0 ? { entries: [...event.entries, ...fresh] } : undefined;
  }

  /**
   * `before_provider_request`: hand the body Pi is about to send to the daemon (`pi/recordRequest`), so a
   * compaction can replay it from the provider's cache. Pi is never kept waiting and the payload is never
   * changed (the answer is `undefined`); a failure is dropped (the compaction then sends Pi's request).
   */
  providerRequest(event: BeforeProviderRequestEvent, ctx: Context): undefined {
    const file = ctx.sessionManager.getSessionFile();
    const model = ctx.model;
    const body = event.payload;
    if (!file || !model || typeof body !== "object" || body === null || Array.isArray(body)) return undefined;
    const request = { provider: model.provider, model: model.id, body: body as JsonObject, sentAt: Date.now() };
    this.daemon.recordRequest(file, request).catch(() => undefined);
    return undefined;
  }

  /** A forwarded `pi/compact`: Pi compacts (`ctx.compact()`); the answer is the entry Pi wrote. */
  private compactInPi(params: { customInstructions?: string; forRequest?: string }, signal: AbortSignal): Promise<unknown> {
    const ctx = this.ctx;
    if (!ctx) return Promise.reject(new RpcError("Pi has no session open", -32001, { reason: "unknownSession" }));
    return new Promise((resolve, reject) => {
      this.forwarded = { signal, ...(params.forRequest ? { forRequest: params.forRequest } : {}) };
      ctx.compact({
        ...(params.customInstructions ? { customInstructions: params.customInstructions } : {}),
        onComplete: (result) => {
          this.forwarded = undefined;
          resolve({ entry: ctx.sessionManager.getLeafEntry() ?? null, tokensBefore: result.tokensBefore });
        },
        onError: (error) => {
          this.forwarded = undefined;
          reject(signal.aborted ? cancelled() : failure(error));
        },
      });
    });
  }

  private warnOnce(ctx: Context, text: string): void {
    if (this.warned) return;
    this.warned = true;
    ctx.ui.notify(`pi-sessiond: ${text}`, "warning");
  }
}

/** `work`'s value, or `undefined` when it takes longer than `ms` (it still runs; its answer is dropped). */
function within<T>(work: Promise<T>, ms: number): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<undefined>((resolve) => {
    timer = setTimeout(() => resolve(undefined), ms); // not unref'd: Pi awaits this turn boundary
  });
  work.catch(() => undefined); // a late failure is dropped with its answer
  return Promise.race([work, late]).finally(() => clearTimeout(timer));
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
