/**
 * Daemon errors as the user reads them: JSON-RPC codes and `data.reason`
 * (`docs/protocol.md`, "Errors") turned into one sentence.
 */
import { ErrorCodes } from "../protocol";

interface RpcErrorLike {
  code?: unknown;
  message?: unknown;
  data?: unknown;
}

const FRIENDLY: Record<string, string> = {
  unknownSession: "The session is no longer open in the daemon; open it again.",
  unknownEntry: "That entry is not in the session (it may have been reloaded).",
  locked: "Another process (Pi itself?) is writing this session; try again when it is done.",
  nothingToCompact: "Nothing to compact yet: the session has no messages to summarize.",
  summarizerFailed: "The summarizer failed",
  conflict: "The session moved to another branch while the summary ran; nothing was written.",
  busy: "A summary is already running for this session.",
  tooLarge: "The message is larger than the daemon accepts (daemon.maxMessageBytes).",
};

/** The numeric JSON-RPC code of an error, if it has one. */
export function errorCode(error: unknown): number | undefined {
  const code = (error as RpcErrorLike | null)?.code;
  return typeof code === "number" ? code : undefined;
}

/** True for a request that was cancelled (by us, a cancel button or a reviewer's reject). */
export function isCancelled(error: unknown): boolean {
  return errorCode(error) === ErrorCodes.REQUEST_CANCELLED;
}

/** The stable `data.reason` of one of the daemon's own errors. */
export function errorReason(error: unknown): string | undefined {
  const reason = errorData(error).reason;
  return typeof reason === "string" ? reason : undefined;
}

/** The Pi command to use instead, when a live Pi holds the session (`liveWriter`'s `data.piCommand`). */
export function piCommand(error: unknown): string | undefined {
  const command = errorData(error).piCommand;
  return typeof command === "string" ? command : undefined;
}

/** What was being done, for the errors whose sentence depends on it. */
export type ErrorAction = "undo" | "commitDraft" | "mask" | "unmask";

const DRAFT_STATES: Record<string, string> = {
  expired: "The draft expired before it was committed; nothing was written. Preview the compaction again.",
  committed: "That draft was already committed.",
  unknown: "The daemon no longer has that draft (it restarted, or the session was closed); preview again.",
};

const CONFLICT: Partial<Record<ErrorAction, string>> = {
  undo: "That summary is no longer the leaf (the session moved on); nothing was undone. Navigate the tree instead.",
  commitDraft: "The session changed since the preview, so the draft no longer fits; nothing was written. Preview again.",
};

/** `invalidParams` naming an entry (`data.entryId`) of a mask or unmask: the tree was out of date. */
const NOT_MASKABLE: Partial<Record<ErrorAction, string>> = {
  mask: "That entry is not an unmasked tool result in the context of the leaf (the tree may be out of date); nothing was written.",
  unmask: "That tool result is not masked in the context of the leaf (the tree may be out of date); nothing was written.",
};

function errorData(error: unknown): Record<string, unknown> {
  const data = (error as RpcErrorLike | null)?.data;
  return typeof data === "object" && data !== null ? (data as Record<string, unknown>) : {};
}

/** The sentence for a reason whose wording depends on the action or on `data`, else undefined. */
function specific(reason: string | undefined, data: Record<string, unknown>, action?: ErrorAction): string | undefined {
  if (reason === "invalidParams" && typeof data.draftState === "string") {
    return DRAFT_STATES[data.draftState];
  }
  if (reason === "conflict" && action !== undefined) {
    return CONFLICT[action];
  }
  if (reason === "invalidParams" && typeof data.entryId === "string" && action !== undefined) {
    return NOT_MASKABLE[action];
  }
  if (reason === "liveWriter" && typeof data.piCommand !== "string") {
    return "Another program (Pi?) wrote to this session moments ago; nothing was written. Try again when it is idle.";
  }
  return undefined; // liveWriter with piCommand: the daemon's message names the Pi command already
}

/** One sentence for a notification: friendly for known reasons, the daemon's message otherwise. */
export function describeError(error: unknown, action?: ErrorAction): string {
  const reason = errorReason(error);
  const raw = (error as RpcErrorLike | null)?.message;
  const message = typeof raw === "string" ? raw : String(error);
  const friendly = specific(reason, errorData(error), action) ?? (reason ? FRIENDLY[reason] : undefined);
  if (friendly === undefined) {
    return message;
  }
  return reason === "summarizerFailed" ? `${friendly}: ${message}` : friendly;
}
