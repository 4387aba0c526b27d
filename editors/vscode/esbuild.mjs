// Bundles the extension (dist/extension.js, what the .vsix ships) and the
// VS Code-free core (out/core.cjs, what the node tests import).
import * as esbuild from "esbuild";

const common = { bundle: true, platform: "node", target: "node18", format: "cjs", logLevel: "warning", metafile: true };

await esbuild.build({
  ...common,
  entryPoints: ["src/extension.ts"],
  outfile: "dist/extension.js",
  external: ["vscode"],
  minifyWhitespace: true,
  minifySyntax: true,
});

const core = await esbuild.build({
  ...common,
  entryPoints: ["src/core/index.ts"],
  outfile: "out/core.cjs",
  packages: "external",
});

// The core must run without VS Code: fail the build when it reaches for it.
for (const output of Object.values(core.metafile.outputs)) {
  const bad = output.imports.filter((i) => i.path === "vscode" || i.path.startsWith("vscode-languageclient"));
  if (bad.length > 0) {
    throw new Error(`src/core must not import ${bad.map((i) => i.path).join(", ")}`);
  }
}
