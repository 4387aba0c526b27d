// The part of Pi's extension API (>= 1.6.0, docs/extensions.md) this extension uses, declared here so
// the extension builds without Pi installed. Pi passes richer objects; only these fields are read.

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export interface FileOperations {
  read: Set<string>;
  written: Set<string>;
  edited: Set<string>;
}

export interface CompactionPreparation {
  firstKeptEntryId: string;
  messagesToSummarize: JsonObject[];
  turnPrefixMessages: JsonObject[];
  isSplitTurn: boolean;
  tokensBefore: number;
  previousSummary?: string;
  fileOps: FileOperations;
}

export interface CompactionResult {
  summary: string;
  firstKeptEntryId: string;
  tokensBefore: number;
  details?: unknown;
  usage?: unknown;
}

export interface TreePreparation {
  targetId: string;
  oldLeafId: string | null;
  entriesToSummarize: JsonObject[];
  userWantsSummary: boolean;
  customInstructions?: string;
  replaceInstructions?: boolean;
}

export interface BeforeCompactEvent {
  preparation: CompactionPreparation;
  customInstructions?: string;
  reason: "manual" | "threshold" | "overflow";
  willRetry: boolean;
  signal: AbortSignal;
}

export interface BeforeTreeEvent {
  preparation: TreePreparation;
  signal: AbortSignal;
}

export interface SessionManagerView {
  getSessionFile(): string | undefined;
  getLeafEntry(): JsonObject | undefined;
  /** The entries from the root to the leaf. */
  getBranch(): JsonObject[];
}

/** The model Pi is using (Pi passes the whole model; only these fields are read). */
export interface ModelView {
  provider: string;
  id: string;
}

/** `before_provider_request`: the provider request body Pi is about to send (a handler may replace it). */
export interface BeforeProviderRequestEvent {
  payload: unknown;
}

export interface Context {
  hasUI: boolean;
  cwd: string;
  model?: ModelView;
  sessionManager: SessionManagerView;
  ui: { notify(message: string, type?: "info" | "warning" | "error"): void };
  compact(options?: {
    customInstructions?: string;
    onComplete?: (result: CompactionResult) => void;
    onError?: (error: Error) => void;
  }): void;
}

export interface BeforeCompactAnswer {
  cancel?: boolean;
  compaction?: CompactionResult;
}

export interface BeforeTreeAnswer {
  cancel?: boolean;
  summary?: { summary: string; details?: unknown; usage?: unknown };
}

/** A `context_edit` Pi appends at a turn boundary (`null` omits the target; else its content is replaced). */
export interface ContextEditDraft {
  type: "context_edit";
  targetId: string;
  replacement: { content: Json } | null;
}

/** What a boundary handler may propose (this extension adds only `context_edit` drafts). */
export type BoundaryDraft = ContextEditDraft | { type: "custom" | "custom_message" | "compaction"; [key: string]: unknown };

/** `turn_end` (Pi >= 1.6.0): after the turn's messages are persisted, before Pi's threshold check. */
export interface TurnEndEvent {
  turnIndex: number;
  messageEntryId: string;
  toolResultEntryIds: string[];
  outcome: "completed" | "aborted" | "error";
  /** The drafts proposed so far by earlier handlers; a result's `entries` replaces them. */
  entries: BoundaryDraft[];
  continue: boolean;
}

export interface BoundaryAnswer {
  entries?: BoundaryDraft[];
  continue?: boolean;
}

type Handler<E, R = void> = (event: E, ctx: Context) => Promise<R | undefined> | R | undefined;

export interface ExtensionAPI {
  on(event: "session_start", handler: Handler<{ reason: string }>): unknown;
  on(event: "session_shutdown", handler: Handler<{ reason: string }>): unknown;
  on(event: "session_before_compact", handler: Handler<BeforeCompactEvent, BeforeCompactAnswer>): unknown;
  on(event: "session_before_tree", handler: Handler<BeforeTreeEvent, BeforeTreeAnswer>): unknown;
  on(event: "turn_end", handler: Handler<TurnEndEvent, BoundaryAnswer>): unknown;
  on(event: "before_provider_request", handler: Handler<BeforeProviderRequestEvent, unknown>): unknown;
}
