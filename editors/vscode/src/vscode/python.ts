/** The Python extension's selected interpreter, through its public API (no npm dependency). */
import * as vscode from "vscode";

interface PythonApi {
  environments?: {
    getActiveEnvironmentPath(resource?: vscode.Uri): { path: string };
    resolveEnvironment(path: string): Promise<{ executable?: { uri?: vscode.Uri } } | undefined>;
  };
}

/** The interpreter's path, or `undefined` when the extension is absent or has none selected. */
export async function pythonExtensionInterpreter(output: vscode.LogOutputChannel): Promise<string | undefined> {
  const extension = vscode.extensions.getExtension<PythonApi>("ms-python.python");
  if (extension === undefined) {
    return undefined;
  }
  try {
    const api = extension.isActive ? extension.exports : await extension.activate();
    const environments = api?.environments;
    if (environments === undefined) {
      return undefined;
    }
    const active = environments.getActiveEnvironmentPath(vscode.workspace.workspaceFolders?.[0]?.uri);
    const resolved = await environments.resolveEnvironment(active.path);
    return resolved?.executable?.uri?.fsPath ?? active.path;
  } catch (error) {
    output.warn(`the Python extension gave no interpreter: ${String(error)}`);
    return undefined;
  }
}
