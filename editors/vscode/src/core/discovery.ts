/**
 * Which command starts the daemon, in this order: the `pi.daemon.command`
 * setting, the `pi.daemon.python` setting, the Python extension's selected
 * interpreter (when `pi_sessiond` imports there), `pi-sessiond` on `PATH`.
 */
import * as path from "node:path";

export type DaemonSource = "command setting" | "python setting" | "python extension" | "PATH";

export interface DaemonCommand {
  command: string;
  args: string[];
  source: DaemonSource;
}

/** Everything discovery looks at, injected so it is testable without VS Code or a shell. */
export interface DiscoveryProbes {
  commandSetting: readonly string[];
  pythonSetting: string;
  /** The Python extension's active interpreter, if the extension is installed. */
  pythonExtensionInterpreter(): Promise<string | undefined>;
  /** Whether `python -c "import pi_sessiond"` succeeds. */
  hasModule(python: string): Promise<boolean>;
  /** The absolute path of an executable on `PATH`. */
  which(name: string): Promise<string | undefined>;
}

export const INSTALL_HINT = "python3 -m pip install pi-sessiond";

const moduleArgs = ["-m", "pi_sessiond", "serve"];

/** The first command that applies, or `undefined` when none does. */
export async function discoverDaemon(probes: DiscoveryProbes): Promise<DaemonCommand | undefined> {
  const [command, ...args] = probes.commandSetting.filter((part) => part !== "");
  if (command !== undefined) {
    return { command, args, source: "command setting" };
  }
  if (probes.pythonSetting.trim() !== "") {
    return { command: probes.pythonSetting.trim(), args: moduleArgs, source: "python setting" };
  }
  const interpreter = await probes.pythonExtensionInterpreter();
  if (interpreter && (await probes.hasModule(interpreter))) {
    return { command: interpreter, args: moduleArgs, source: "python extension" };
  }
  const onPath = await probes.which("pi-sessiond");
  return onPath ? { command: onPath, args: ["serve"], source: "PATH" } : undefined;
}

/** The message shown when no daemon was found. */
export function missingDaemonMessage(interpreter: string | undefined, remoteName?: string): string {
  const where = interpreter ? ` (the selected interpreter ${interpreter} does not have it either)` : "";
  // In a remote window user-level values of these machine-scoped keys are ignored (greyed out).
  const how = remoteName
    ? `or set \`pi.daemon.python\` / \`pi.daemon.command\` in Remote settings (this is a remote window: ${remoteName})`
    : "or set `pi.daemon.python` / `pi.daemon.command`";
  return `pi-sessiond was not found on PATH${where}. Install it with \`${INSTALL_HINT}\`, ${how}.`;
}

/** Searches `PATH` like a shell (with `PATHEXT` on Windows); `isExecutable` is injected. */
export async function whichOnPath(
  name: string,
  env: NodeJS.ProcessEnv,
  isExecutable: (file: string) => Promise<boolean>,
  platform: NodeJS.Platform = process.platform,
): Promise<string | undefined> {
  const sep = platform === "win32" ? ";" : ":";
  const exts = platform === "win32" ? (env.PATHEXT ?? ".EXE;.CMD;.BAT").split(";") : [""];
  for (const dir of (env.PATH ?? env.Path ?? "").split(sep)) {
    if (dir === "") {
      continue;
    }
    for (const ext of exts) {
      const file = (platform === "win32" ? path.win32 : path.posix).join(dir, name + ext.toLowerCase());
      if (await isExecutable(file)) {
        return file;
      }
    }
  }
  return undefined;
}
