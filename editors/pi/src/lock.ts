// The session's write lock, held through `pi-sessiond hold-lock FILE` (Node has no flock): the child
// exits, releasing it, when its stdin closes — when Pi lets the session go, exits or is killed.

import { type ChildProcess, spawn } from "node:child_process";
import { createInterface } from "node:readline";

export class HeldLock {
  private constructor(private readonly child: ChildProcess) {}

  /** Take the lock of `sessionFile` for this Pi (its pid, its forwarding `socket`); rejects naming the holder. */
  static take(command: string[], sessionFile: string, socket: string, timeoutMs = 60_000): Promise<HeldLock> {
    const [program, ...base] = command;
    if (!program) return Promise.reject(new Error("no pi-sessiond command"));
    const args = [...base, "hold-lock", sessionFile, "--pid", String(process.pid), "--socket", socket];
    const child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"] });
    let stderr = "";
    child.stderr?.on("data", (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill();
        reject(new Error("pi-sessiond hold-lock did not get ready"));
      }, timeoutMs);
      child.on("error", (error) => {
        clearTimeout(timer);
        reject(error);
      });
      child.on("exit", (code) => {
        clearTimeout(timer);
        reject(new Error(stderr.trim() || `pi-sessiond hold-lock exited with ${code}`));
      });
      const lines = createInterface({ input: child.stdout! });
      lines.once("line", (line) => {
        clearTimeout(timer);
        try {
          if ((JSON.parse(line) as { ready?: boolean }).ready !== true) throw new Error(line);
        } catch (error) {
          child.kill();
          reject(error instanceof Error ? error : new Error(String(error)));
          return;
        }
        child.removeAllListeners("exit");
        child.unref();
        (child.stdout as unknown as { unref?: () => void }).unref?.();
        (child.stderr as unknown as { unref?: () => void }).unref?.();
        (child.stdin as unknown as { unref?: () => void }).unref?.();
        resolve(new HeldLock(child));
      });
    });
  }

  /** Let the lock go (the child sees its stdin close and exits). */
  release(): void {
    this.child.stdin?.end();
  }
}
