// pi-sessiond for Pi: while Pi has a session open, this extension holds the session's lock (so
// daemons and the CLI refuse to write beside Pi and say who holds it), hands Pi's compactions and
// branch summaries to a pi-sessiond daemon (its summarizer settings, fidelity gate and masking; Pi
// still writes the entry), has Pi write the daemon's masking edits at its turn boundaries
// (`compaction.masking`), runs the `pi/compact` requests editors send for this session, and hands
// the daemon each provider request Pi sends (`pi/recordRequest`, memory only) so that a compaction
// can replay it from the provider's prompt cache (`summarizer.cacheReuse`).
// When the daemon is missing or fails, Pi's own summarizer runs and the user is told once.

import { DaemonLink } from "./daemon.js";
import { ForwardingServer } from "./forward.js";
import { LiveSession } from "./live.js";
import { sessiondCommand } from "./paths.js";
import type {
  BeforeCompactEvent,
  BeforeProviderRequestEvent,
  BeforeTreeEvent,
  Context,
  ExtensionAPI,
  TurnEndEvent,
} from "./pi-api.js";

export default function piSessiond(pi: ExtensionAPI): void {
  const command = sessiondCommand();
  const daemon = new DaemonLink(command);
  const live = new LiveSession(daemon);
  pi.on("session_start", (_event, ctx) => start(live, command, ctx));
  pi.on("session_shutdown", () => {
    live.stop();
    daemon.close();
  });
  pi.on("session_before_compact", (event: BeforeCompactEvent, ctx) => live.beforeCompact(event, ctx));
  pi.on("session_before_tree", (event: BeforeTreeEvent, ctx) => live.beforeTree(event, ctx));
  pi.on("turn_end", (event: TurnEndEvent, ctx) => live.turnEnd(event, ctx));
  pi.on("before_provider_request", (event: BeforeProviderRequestEvent, ctx) => live.providerRequest(event, ctx));
}

async function start(live: LiveSession, command: string[], ctx: Context): Promise<void> {
  const file = ctx.sessionManager.getSessionFile();
  if (!file) return; // an in-memory session: nothing to hold
  await live.start(file, ctx, command, ForwardingServer.listen);
}
