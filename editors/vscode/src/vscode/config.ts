/** Reading `pi.*` settings from VS Code. */
import * as vscode from "vscode";
import { explicitValue } from "../core/settings";

/** The explicitly set value of `pi.<key>` (see `explicitValue`). */
export function explicitSetting(key: string): unknown {
  return explicitValue(key, vscode.workspace.getConfiguration("pi").inspect(key));
}
