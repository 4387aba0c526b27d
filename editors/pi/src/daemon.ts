// The extension's connection to a pi-sessiond daemon: the running one's Unix socket when it exists,
// else one spawned over stdio (`pi-sessiond serve`). `pi/summarize` returns a DRAFT; Pi writes it.

import { type ChildProcess, spawn } from "node:child_process";
import { existsSync } from "node:fs";
import { connect } from "node:net";
import { Duplex } from "node:stream";
import { Connection } from "./rpc.js";
import type {
  BeforeCompactEvent,
  CompactionResult,
  ContextEditDraft,
  Json,
  JsonObject,
  TreePreparation,
} from "./pi-api.js";
import { daemonSocket } from "./paths.js";

export interface Draft {
  summary: string;
  firstKeptEntryId: string | null;
  tokensBefore: number;
  details?: unknown;
  usage?: unknown;
}

/** A provider request Pi sent: its model and the JSON body, when (ms since the epoch). */
export interface ProviderRequest {
  provider: string;
  model: string;
  body: JsonObject;
  sentAt: number;
}

export class DaemonLink {
  private connection: Promise<Connection> | undefined;
  private child: ChildProcess | undefined;
  /** The daemon's session id of each session file, learnt from `pi/openSession` (per connection). */
  private sessionIds = new Map<string, string>();

  constructor(
    private readonly command: string[],
    private readonly env: NodeJS.ProcessEnv = process.env,
  ) {}

  /**
   * A DRAFT of Pi's compaction `event` of `sessionFile`, as the `compaction` Pi should write. The daemon
   * first folds in what Pi wrote since its last look (the masking edits of this turn boundary among them),
   * so it measures the context Pi has. At Pi's threshold or overflow (no instructions, not forwarded)
   * with `compaction.prepareAt` set, the daemon is asked without Pi's preparation, so that its
   * background draft can be the answer at once, with its own cut; that cut is used when it is on
   * Pi's `branch` (entry ids, root first) no later than Pi's cut, else Pi's preparation is
   * summarized as it is.
   */
  async compaction(
    sessionFile: string,
    event: BeforeCompactEvent,
    branch: readonly string[],
    forRequest?: string,
  ): Promise<CompactionResult> {
    const prep = event.preparation;
    const base = {
      path: sessionFile,
      reason: event.reason,
      customInstructions: event.customInstructions ?? null,
      ...(forRequest ? { forRequest } : {}),
    };
    // Opening folds in Pi's newest lines.
    const opened = (await this.call("pi/openSession", { path: sessionFile }, event.signal)) as { sessionId: string };
    let draft: Draft | undefined;
    const automatic = event.reason !== "manual" && !event.customInstructions && !forRequest;
    if (automatic && (await this.prepares(opened.sessionId, event.signal))) {
      const prepared = (await this.call("pi/summarize", base, event.signal)) as Draft;
      if (prepared.firstKeptEntryId && notAfter(branch, prepared.firstKeptEntryId, prep.firstKeptEntryId)) {
        draft = prepared;
      }
    }
    draft ??= (await this.call("pi/summarize", { ...base, preparation: wirePreparation(prep) }, event.signal)) as Draft;
    return {
      summary: draft.summary,
      firstKeptEntryId: draft.firstKeptEntryId ?? prep.firstKeptEntryId,
      tokensBefore: prep.tokensBefore,
      details: draft.details,
      ...(draft.usage ? { usage: draft.usage } : {}),
    };
  }

  /** Whether the daemon drafts compactions of the session in the background (`compaction.prepareAt`). */
  private async prepares(sessionId: string, signal: AbortSignal): Promise<boolean> {
    const answer = (await this.call("pi/getSettings", { sessionId }, signal)) as {
      settings?: { compaction?: { prepareAt?: number | null } };
    };
    return typeof answer.settings?.compaction?.prepareAt === "number";
  }

  /** A DRAFT branch summary of Pi's tree `prep` of `sessionFile`. */
  async branch(sessionFile: string, prep: TreePreparation, signal: AbortSignal): Promise<Draft> {
    const params = {
      path: sessionFile,
      kind: "branchSummary",
      entriesToSummarize: prep.entriesToSummarize as Json[],
      customInstructions: prep.customInstructions ?? null,
      replaceInstructions: prep.replaceInstructions ?? false,
    };
    return (await this.call("pi/summarize", params, signal)) as Draft;
  }

  /**
   * The masking edits the daemon makes at Pi's threshold, as drafts for Pi to write
   * (`pi/mask {dryRun: true, reason: "threshold"}` after `pi/openSession`, which folds in Pi's newest
   * lines): none unless `compaction.masking.enabled` and the context is past the threshold.
   */
  async maskingEdits(sessionFile: string): Promise<ContextEditDraft[]> {
    const opened = (await this.call("pi/openSession", { path: sessionFile })) as { sessionId: string };
    const params = { sessionId: opened.sessionId, dryRun: true, reason: "threshold" };
    const answer = (await this.call("pi/mask", params)) as { edits: ContextEditDraft[] };
    return answer.edits.map((edit) => ({ type: "context_edit", targetId: edit.targetId, replacement: edit.replacement }));
  }

  /**
   * Hand the daemon the provider request Pi is about to send for `sessionFile` (`pi/recordRequest`; the
   * daemon keeps it in memory only). The session is opened once per connection; a daemon that no longer
   * knows the id (it restarted) is asked again after one more `pi/openSession`.
   */
  async recordRequest(sessionFile: string, request: ProviderRequest): Promise<void> {
    for (const fresh of [false, true]) {
      const sessionId = await this.sessionId(sessionFile, fresh);
      try {
        await this.call("pi/recordRequest", { sessionId, ...request });
        return;
      } catch (error) {
        if (fresh || (error as { code?: number }).code !== -32001) throw error;
      }
    }
  }

  private async sessionId(sessionFile: string, fresh: boolean): Promise<string> {
    const known = fresh ? undefined : this.sessionIds.get(sessionFile);
    if (known) return known;
    const opened = (await this.call("pi/openSession", { path: sessionFile })) as { sessionId: string };
    this.sessionIds.set(sessionFile, opened.sessionId);
    return opened.sessionId;
  }

  /** Connect now (a running daemon, else a spawned one) so that the first turn boundary need not wait. */
  warmUp(): void {
    this.connected().catch(() => undefined);
  }

  close(): void {
    void this.connection?.then((c) => c.close()).catch(() => undefined);
    this.connection = undefined;
    this.child?.stdin?.end();
    this.child = undefined;
  }

  private async call(method: string, params: unknown, signal?: AbortSignal): Promise<unknown> {
    const connection = await this.connected();
    return connection.request(method, params, signal);
  }

  private connected(): Promise<Connection> {
    if (this.connection) {
      const current = this.connection;
      return current.then((c) => (c.closed ? this.reconnect() : c));
    }
    return this.reconnect();
  }

  private reconnect(): Promise<Connection> {
    this.sessionIds.clear();
    this.connection = this.open().catch((error: unknown) => {
      this.connection = undefined;
      throw error;
    });
    return this.connection;
  }

  private async open(): Promise<Connection> {
    const stream = existsSync(daemonSocket(this.env)) ? await this.socket() : this.spawned();
    const connection = new Connection(stream);
    await connection.request("initialize", {
      processId: process.pid,
      clientInfo: { name: "pi-sessiond-pi" },
      capabilities: {},
      initializationOptions: {},
    });
    connection.notify("initialized", {});
    return connection;
  }

  private socket(): Promise<Duplex> {
    return new Promise((resolve, reject) => {
      const stream = connect(daemonSocket(this.env));
      stream.once("connect", () => resolve(stream));
      stream.once("error", reject);
    });
  }

  private spawned(): Duplex {
    const [program, ...args] = this.command;
    if (!program) throw new Error("no pi-sessiond command");
    const child = spawn(program, [...args, "serve"], { stdio: ["pipe", "pipe", "ignore"], env: this.env });
    child.unref();
    this.child = child;
    return new ChildDuplex(child);
  }
}

/** Pi's compaction preparation in the `pi/beforeCompact` shape `pi/summarize` takes. */
function wirePreparation(prep: BeforeCompactEvent["preparation"]): Json {
  const modified = new Set([...prep.fileOps.edited, ...prep.fileOps.written]);
  return {
    firstKeptEntryId: prep.firstKeptEntryId,
    isSplitTurn: prep.isSplitTurn,
    tokensBefore: prep.tokensBefore,
    messagesToSummarize: prep.messagesToSummarize,
    turnPrefixMessages: prep.turnPrefixMessages,
    previousSummary: prep.previousSummary ?? null,
    readFiles: [...prep.fileOps.read].filter((f) => !modified.has(f)).sort(),
    modifiedFiles: [...modified].sort(),
  };
}

/** Whether `cut` is on `branch` (ids, root first) and not after `piCut`. */
export function notAfter(branch: readonly string[], cut: string, piCut: string): boolean {
  const at = branch.indexOf(cut);
  return cut === piCut || (at >= 0 && at <= branch.indexOf(piCut));
}

/** A child's stdin/stdout as one duplex stream (the daemon's stdio transport). */
class ChildDuplex extends Duplex {
  constructor(private readonly child: ChildProcess) {
    super();
    child.stdout?.on("data", (chunk: Buffer) => this.push(chunk));
    child.stdout?.on("end", () => this.push(null));
    child.on("exit", () => this.destroy());
    child.on("error", (error) => this.destroy(error));
    (child.stdout as unknown as { unref?: () => void }).unref?.();
    (child.stdin as unknown as { unref?: () => void }).unref?.();
  }

  override _read(): void {}

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    if (!this.child.stdin) return done(new Error("no stdin"));
    this.child.stdin.write(chunk, done);
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.child.stdin?.end();
    done(error);
  }
}
