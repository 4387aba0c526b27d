/**
 * The daemon's lifecycle inside VS Code: discovery, `LanguageClient` over
 * stdio, hook declaration, crash and missing-daemon messages, restart.
 */
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access } from "node:fs/promises";
import * as vscode from "vscode";
import {
  CloseAction,
  ErrorAction,
  LanguageClient,
  type LanguageClientOptions,
  type StaticFeature,
  TransportKind,
} from "vscode-languageclient/node";
import { PiClient, type RpcEndpoint } from "../core/client";
import { type DaemonCommand, discoverDaemon, INSTALL_HINT, missingDaemonMessage, whichOnPath } from "../core/discovery";
import { initializationOptions, piCapabilities } from "../core/settings";
import { explicitSetting } from "./config";
import { pythonExtensionInterpreter } from "./python";

export class Daemon implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private pi: PiClient | undefined;
  private starting: Promise<PiClient | undefined> | undefined;
  private readonly started = new vscode.EventEmitter<PiClient>();
  /** Fires with the new client after every (re)start; attach notification handlers here. */
  readonly onDidStart = this.started.event;

  constructor(private readonly output: vscode.LogOutputChannel) {}

  /** The running client, starting the daemon when needed; `undefined` when it cannot start. */
  ensure(): Promise<PiClient | undefined> {
    if (this.pi) {
      return Promise.resolve(this.pi);
    }
    this.starting ??= this.start().finally(() => {
      this.starting = undefined;
    });
    return this.starting;
  }

  async restart(): Promise<PiClient | undefined> {
    await this.stop();
    return this.ensure();
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    this.pi = undefined;
    if (client?.isRunning()) {
      await client.stop(3000).catch((error: unknown) => this.output.warn(`stop: ${String(error)}`));
    }
    await client?.dispose().catch(() => undefined);
  }

  dispose(): void {
    void this.stop();
    this.started.dispose();
  }

  private async start(): Promise<PiClient | undefined> {
    const command = await this.discover();
    if (command === undefined) {
      return undefined;
    }
    this.output.info(`starting ${command.command} ${command.args.join(" ")} (from the ${command.source})`);
    const client = new LanguageClient("pi", "Pi Sessions", serverOptions(command), this.clientOptions());
    client.registerFeature(hooksFeature(config().get<boolean>("reviewSummaries", false)));
    try {
      await client.start();
    } catch (error) {
      this.output.error(`the daemon did not start: ${String(error)}`);
      void showFailure(`pi-sessiond did not start (${command.command}): ${String(error)}`, this.output);
      await client.dispose().catch(() => undefined);
      return undefined;
    }
    const endpoint: RpcEndpoint = client;
    this.client = client;
    this.pi = new PiClient(endpoint);
    this.started.fire(this.pi);
    return this.pi;
  }

  private async discover(): Promise<DaemonCommand | undefined> {
    let interpreter: string | undefined;
    const command = await discoverDaemon({
      commandSetting: config().get<string[]>("daemon.command", []),
      pythonSetting: config().get<string>("daemon.python", ""),
      pythonExtensionInterpreter: async () => {
        interpreter = await pythonExtensionInterpreter(this.output);
        return interpreter;
      },
      hasModule,
      which: (name) => whichOnPath(name, process.env, isExecutable),
    });
    if (command === undefined) {
      const message = missingDaemonMessage(interpreter, vscode.env.remoteName);
      this.output.error(message);
      void showFailure(message, this.output);
    }
    return command;
  }

  private clientOptions(): LanguageClientOptions {
    return {
      documentSelector: [],
      outputChannel: this.output,
      initializationOptions: () => initializationOptions(explicitSetting),
      errorHandler: {
        error: () => ({ action: ErrorAction.Continue }),
        closed: () => {
          if (this.client !== undefined) {
            this.pi = undefined;
            this.client = undefined;
            void showFailure("pi-sessiond stopped unexpectedly.", this.output);
          }
          return { action: CloseAction.DoNotRestart, handled: true };
        },
      },
    };
  }
}

function config(): vscode.WorkspaceConfiguration {
  return vscode.workspace.getConfiguration("pi");
}

function serverOptions(command: DaemonCommand) {
  const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  return {
    command: command.command,
    args: command.args,
    transport: TransportKind.stdio,
    options: { cwd, env: process.env },
  };
}

/** Declares `capabilities.experimental.pi.hooks` at initialize. */
function hooksFeature(reviewSummaries: boolean): StaticFeature {
  return {
    fillClientCapabilities(capabilities) {
      capabilities.experimental = { ...(capabilities.experimental as object), ...piCapabilities(reviewSummaries) };
    },
    initialize() {},
    getState: () => ({ kind: "static" }),
    clear() {},
  };
}

function hasModule(python: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(python, ["-c", "import pi_sessiond"], { timeout: 15000 }, (error) => resolve(error === null));
  });
}

async function isExecutable(file: string): Promise<boolean> {
  try {
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function showFailure(message: string, output: vscode.LogOutputChannel): Promise<void> {
  const choice = await vscode.window.showErrorMessage(message, "Restart", "Copy Install Command", "Show Log");
  if (choice === "Restart") {
    await vscode.commands.executeCommand("pi.restartDaemon");
  } else if (choice === "Copy Install Command") {
    await vscode.env.clipboard.writeText(INSTALL_HINT);
  } else if (choice === "Show Log") {
    output.show();
  }
}
