/**
 * The protocol glue: typed calls to pi-sessiond over any JSON-RPC endpoint.
 *
 * Depends only on `vscode-jsonrpc` and the generated `protocol.ts`, so the
 * same code runs inside VS Code (over `LanguageClient`, which satisfies
 * {@link RpcEndpoint} structurally) and in node tests (over a
 * `MessageConnection` to the real daemon).
 */
import { randomUUID } from "node:crypto";
import { type CancellationToken, type Disposable, ProgressType } from "vscode-jsonrpc";
import {
  type CompactResult,
  type CompactionEnded,
  type CompactionStarted,
  type Compacted,
  type ContextResult,
  type Draft,
  type EntriesResult,
  type IdResult,
  type ListSessionsResult,
  type MaskResult,
  Methods,
  type NavigateResult,
  type ReviewSummaryAnswer,
  type ReviewSummaryParams,
  type SessionChanged,
  type SessionLive,
  type SessionLoaded,
  type SessionEntry,
  type SessionInfo,
  type SessionSummary,
  type SettingsResult,
  type StatsResult,
  type TreeNavigated,
  type TreeNode,
  type TreeResult,
  type UndoResult,
} from "../protocol";

/** What the extension needs of a JSON-RPC connection; `LanguageClient` and `MessageConnection` both fit. */
export interface RpcEndpoint {
  sendRequest<R>(method: string, params: unknown, token?: CancellationToken): Promise<R>;
  sendNotification(method: string, params: unknown): Promise<void>;
  // biome-ignore lint/suspicious/noExplicitAny: the handler signatures of vscode-jsonrpc take any
  onNotification(method: string, handler: (params: any) => void): Disposable;
  // biome-ignore lint/suspicious/noExplicitAny: as above
  onRequest(method: string, handler: (params: any, token: CancellationToken) => unknown): Disposable;
  onProgress<P>(type: ProgressType<P>, token: string | number, handler: (value: P) => void): Disposable;
}

/** One `$/progress` value (LSP work-done progress). */
export type WorkDoneProgressValue =
  | { kind: "begin"; title: string; cancellable?: boolean; message?: string; percentage?: number }
  | { kind: "report"; cancellable?: boolean; message?: string; percentage?: number }
  | { kind: "end"; message?: string };

/** The progress type of work-done progress (identity is irrelevant to the wire). */
export const workDoneProgress = new ProgressType<WorkDoneProgressValue>();

/** How a summarizer request is watched and stopped. */
export interface SummaryOptions {
  /** Cancelling it sends `$/cancelRequest`; the request then fails with -32800. */
  token?: CancellationToken;
  /** Receives the run's progress on a client-created `workDoneToken`. */
  onProgress?: (value: WorkDoneProgressValue) => void;
}

/** The reviewer of the `pi/reviewSummary` hook: a person, usually. */
export type SummaryReviewer = (params: ReviewSummaryParams, token: CancellationToken) => Promise<ReviewSummaryAnswer>;

/** Pi's three ways to leave a branch (its `/tree` dialog). */
export interface NavigateOptions {
  summarize?: boolean;
  customInstructions?: string;
  replaceInstructions?: boolean;
  label?: string;
}

/** Typed access to every pi-sessiond method and notification the extension uses. */
export class PiClient {
  constructor(
    private readonly rpc: RpcEndpoint,
    private readonly newToken: () => string = randomUUID,
  ) {}

  /** Sessions of `cwd` (all when omitted), newest first. */
  async listSessions(cwd?: string): Promise<SessionSummary[]> {
    const result = await this.rpc.sendRequest<ListSessionsResult>(Methods.LIST_SESSIONS, cwd ? { cwd } : {});
    return result.sessions ?? [];
  }

  openSession(path: string): Promise<SessionInfo> {
    return this.rpc.sendRequest<SessionInfo>(Methods.OPEN_SESSION, { path });
  }

  closeSession(sessionId: string): Promise<null> {
    return this.rpc.sendRequest<null>(Methods.CLOSE_SESSION, { sessionId });
  }

  /** The whole tree, fetched page by page when the daemon pages it. */
  async getTree(sessionId: string, pageSize = 5000): Promise<TreeResult> {
    const nodes: TreeNode[] = [];
    let leafId: string | null | undefined;
    for (;;) {
      const page = await this.rpc.sendRequest<TreeResult>(Methods.GET_TREE, {
        sessionId,
        offset: nodes.length,
        limit: pageSize,
      });
      leafId = page.leafId;
      const got = page.nodes ?? [];
      nodes.push(...got);
      if (got.length === 0 || nodes.length >= (page.total ?? nodes.length)) {
        return { leafId, nodes, total: nodes.length };
      }
    }
  }

  async getEntries(sessionId: string, ids: string[]): Promise<SessionEntry[]> {
    const result = await this.rpc.sendRequest<EntriesResult>(Methods.GET_ENTRIES, { sessionId, ids });
    return result.entries ?? [];
  }

  getContext(sessionId: string, leafId?: string): Promise<ContextResult> {
    return this.rpc.sendRequest<ContextResult>(Methods.GET_CONTEXT, leafId ? { sessionId, leafId } : { sessionId });
  }

  getStats(sessionId: string): Promise<StatsResult> {
    return this.rpc.sendRequest<StatsResult>(Methods.GET_STATS, { sessionId });
  }

  getSettings(sessionId?: string): Promise<SettingsResult> {
    return this.rpc.sendRequest<SettingsResult>(Methods.GET_SETTINGS, sessionId ? { sessionId } : {});
  }

  /** Sets (or, with `null`, clears) the label of an entry. */
  setLabel(sessionId: string, entryId: string, label: string | null): Promise<IdResult> {
    return this.rpc.sendRequest<IdResult>(Methods.SET_LABEL, { sessionId, entryId, label });
  }

  /** Pi's `/fork`: a new session file holding the path to `entryId`. */
  fork(sessionId: string, entryId: string): Promise<SessionInfo> {
    return this.rpc.sendRequest<SessionInfo>(Methods.FORK, { sessionId, entryId });
  }

  /** Manual compaction; cancellable, with progress when asked for. */
  compact(sessionId: string, customInstructions?: string, options: SummaryOptions = {}): Promise<CompactResult> {
    const params = customInstructions ? { sessionId, customInstructions } : { sessionId };
    return this.withWorkDone<CompactResult>(Methods.COMPACT, params, options);
  }

  /** `pi/compact {draft: true}`: the summary made but not written (DRAFT); cancellable, with progress. */
  compactDraft(sessionId: string, customInstructions?: string, options: SummaryOptions = {}): Promise<Draft> {
    const params = customInstructions ? { sessionId, customInstructions, draft: true } : { sessionId, draft: true };
    return this.withWorkDone<Draft>(Methods.COMPACT, params, options);
  }

  /** `pi/commitDraft`: writes the draft; `summary` only when the person edited it. */
  commitDraft(sessionId: string, draftId: string, summary?: string): Promise<CompactResult> {
    const params = summary === undefined ? { sessionId, draftId } : { sessionId, draftId, summary };
    return this.rpc.sendRequest<CompactResult>(Methods.COMMIT_DRAFT, params);
  }

  /** `pi/undo`: takes back the compaction or branch summary `entryId` while it is the leaf. */
  undo(sessionId: string, entryId: string): Promise<UndoResult> {
    return this.rpc.sendRequest<UndoResult>(Methods.UNDO, { sessionId, entryId });
  }

  /** `pi/mask`: masks the named tool results, or (no `entryIds`) what `compaction.masking` picks. */
  mask(sessionId: string, options: { entryIds?: string[]; dryRun?: boolean } = {}): Promise<MaskResult> {
    return this.rpc.sendRequest<MaskResult>(Methods.MASK, { sessionId, ...options });
  }

  /** `pi/unmask`: restores the masked tool results `entryIds` with edits carrying their originals. */
  unmask(sessionId: string, entryIds: string[]): Promise<MaskResult> {
    return this.rpc.sendRequest<MaskResult>(Methods.UNMASK, { sessionId, entryIds });
  }

  /** Pi's `/tree`: move the leaf to `targetId`, optionally summarizing the branch left. */
  navigateTree(
    sessionId: string,
    targetId: string,
    choice: NavigateOptions = {},
    options: SummaryOptions = {},
  ): Promise<NavigateResult> {
    return this.withWorkDone<NavigateResult>(Methods.NAVIGATE_TREE, { sessionId, targetId, ...choice }, options);
  }

  /** Sends changed settings the LSP way (`{settings: {pi: SETTINGS}}`). */
  didChangeConfiguration(settings: Record<string, unknown>): Promise<void> {
    return this.rpc.sendNotification("workspace/didChangeConfiguration", { settings: { pi: settings } });
  }

  onSessionChanged(handler: (event: SessionChanged) => void): Disposable {
    return this.rpc.onNotification(Methods.SESSION_CHANGED, handler);
  }

  onSessionLive(handler: (event: SessionLive) => void): Disposable {
    return this.rpc.onNotification(Methods.SESSION_LIVE, handler);
  }

  /** A session opened with `loading: true` was read in full (its warnings, or why it was closed). */
  onSessionLoaded(handler: (event: SessionLoaded) => void): Disposable {
    return this.rpc.onNotification(Methods.SESSION_LOADED, handler);
  }

  onCompacted(handler: (event: Compacted) => void): Disposable {
    return this.rpc.onNotification(Methods.COMPACTED, handler);
  }

  onCompactionStarted(handler: (event: CompactionStarted) => void): Disposable {
    return this.rpc.onNotification(Methods.COMPACTION_STARTED, handler);
  }

  onCompactionEnded(handler: (event: CompactionEnded) => void): Disposable {
    return this.rpc.onNotification(Methods.COMPACTION_ENDED, handler);
  }

  onTreeNavigated(handler: (event: TreeNavigated) => void): Disposable {
    return this.rpc.onNotification(Methods.TREE_NAVIGATED, handler);
  }

  /** Answers `pi/reviewSummary` (declare the hook at initialize, see `piCapabilities`). */
  handleReviewSummary(reviewer: SummaryReviewer): Disposable {
    return this.rpc.onRequest(Methods.REVIEW_SUMMARY, (params: ReviewSummaryParams, token: CancellationToken) =>
      reviewer(params, token),
    );
  }

  private async withWorkDone<R>(method: string, params: object, options: SummaryOptions): Promise<R> {
    if (!options.onProgress) {
      return this.send<R>(method, params, options.token);
    }
    const workDoneToken = this.newToken();
    const subscription = this.rpc.onProgress(workDoneProgress, workDoneToken, options.onProgress);
    try {
      return await this.send<R>(method, { ...params, workDoneToken }, options.token);
    } finally {
      subscription.dispose();
    }
  }

  /**
   * Never passes an `undefined` token: `MessageConnection.sendRequest(method, params, undefined)`
   * would send `[params, null]` (positional params), which the daemon rightly rejects.
   */
  private send<R>(method: string, params: object, token: CancellationToken | undefined): Promise<R> {
    return token === undefined
      ? this.rpc.sendRequest<R>(method, params)
      : this.rpc.sendRequest<R>(method, params, token);
  }
}

/** One update for a progress notification (VS Code's `Progress.report` takes increments). */
export interface ProgressUpdate {
  message?: string;
  increment?: number;
}

/** Turns `$/progress` values (absolute percentages) into progress updates (increments). */
export function progressReporter(report: (update: ProgressUpdate) => void): (value: WorkDoneProgressValue) => void {
  let last = 0;
  return (value) => {
    if (value.kind === "end") {
      return;
    }
    const update: ProgressUpdate = {};
    if (value.message !== undefined) {
      update.message = value.message;
    }
    if (value.percentage !== undefined) {
      update.increment = Math.max(0, value.percentage - last);
      last = Math.max(last, value.percentage);
    }
    report(update);
  };
}
