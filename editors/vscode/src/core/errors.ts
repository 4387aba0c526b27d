/**
 * Daemon errors as the user reads them: JSON-RPC codes and `data.reason`
 * (PROTOCOL.md "Errors") turned into one sentence.
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
  const data = (error as RpcErrorLike | null)?.data;
  const reason = (data as { reason?: unknown } | null | undefined)?.reason;
  return typeof reason === "string" ? reason : undefined;
}

/** One sentence for a notification: friendly for known reasons, the daemon's message otherwise. */
export function describeError(error: unknown): string {
  const reason = errorReason(error);
  const raw = (error as RpcErrorLike | null)?.message;
  const message = typeof raw === "string" ? raw : String(error);
  const friendly = reason ? FRIENDLY[reason] : undefined;
  if (friendly === undefined) {
    return message;
  }
  return reason === "summarizerFailed" ? `${friendly}: ${message}` : friendly;
}
