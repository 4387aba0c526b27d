// Where each pi.* value comes from, the remote-window rule, and the navigate message (issue 17, items 2 and 3).
import assert from "node:assert/strict";
import { test } from "node:test";
import core from "../out/core.cjs";

test("a machine-scoped key in a remote window: Remote settings, or unset with the hint", () => {
  const set = core.sourceRow("daemon.python", true, { defaultValue: "", globalValue: "/v/bin/python" }, "code-server");
  assert.deepEqual(set, { key: "daemon.python", value: "/v/bin/python", source: "Remote settings", note: "" });
  const unset = core.sourceRow("daemon.python", true, { defaultValue: "" }, "ssh-remote");
  assert.equal(unset.source, "default");
  assert.match(unset.note, /ignores user-level values .*Open Remote Settings/);
  const local = core.sourceRow("daemon.python", true, { defaultValue: "" }, undefined);
  assert.equal(local.note, "");
  assert.equal(core.sourceRow("daemon.python", true, { globalValue: "p" }).source, "user settings");
});

test("the most specific scope wins, except summarizer.*, where a workspace value is ignored", () => {
  const row = core.sourceRow("compaction.reserveTokens", false, { globalValue: 1, workspaceValue: 2, workspaceFolderValue: 3 });
  assert.deepEqual([row.value, row.source], [3, "workspace folder settings"]);
  const key = core.sourceRow("summarizer.baseUrl", true, { defaultValue: null, workspaceValue: "http://evil" });
  assert.deepEqual([key.value, key.source], [null, "default"]);
  assert.match(key.note, /workspace value is ignored/);
});

test("the document lists every row and the daemon's layers", () => {
  const rows = core.PI_KEYS.map(({ key, machine }) => core.sourceRow(key, machine, { defaultValue: 0 }, "wsl"));
  const text = core.sourcesMarkdown(rows, "wsl", {
    settings: { compaction: { reserveTokens: 9 } },
    sources: { "compaction.reserveTokens": "global" },
  });
  assert.match(text, /remote window\*\* \(`wsl`\)/);
  for (const { key } of core.PI_KEYS) {
    assert.ok(text.includes(`| \`pi.${key}\` |`), key);
  }
  assert.match(text, /\| `compaction\.reserveTokens` \| `9` \| global \|/);
  assert.doesNotMatch(core.sourcesMarkdown([], undefined), /daemon's effective/);
});

test("a remote window whose summarizer fell back to the default says so, once it is known", () => {
  assert.match(core.remoteSummarizerWarning("ssh-remote", { defaultValue: "offline" }, { "compaction.reserveTokens": "default" }),
    /offline summarizer: pi\.summarizer\.\* is unset for this remote window \(ssh-remote\).*Open Remote Settings/);
  assert.equal(core.remoteSummarizerWarning(undefined, { defaultValue: "offline" }, {}), undefined);
  assert.equal(core.remoteSummarizerWarning("wsl", { globalValue: "openai" }, {}), undefined);
  assert.equal(core.remoteSummarizerWarning("wsl", {}, { "summarizer.provider": "global" }), undefined);
  assert.equal(core.remoteSummarizerWarning("wsl", {}, { summarizer: "global" }), undefined);
});

test("the missing-daemon message points to Remote settings in a remote window", () => {
  assert.match(core.missingDaemonMessage(undefined, "code-server"), /in Remote settings \(this is a remote window: code-server\)/);
  assert.doesNotMatch(core.missingDaemonMessage(undefined), /Remote/);
});

test("after Navigate + Summarize the message says a summary was written", () => {
  const summary = { type: "branch_summary", id: "ab12cd34" };
  assert.equal(
    core.navigatedMessage({ leafId: "ab12cd34", entry: summary }),
    "Pi: moved; a branch summary of the path you left was written (ab12cd34).",
  );
  assert.equal(core.navigatedMessage({ leafId: "x", editorText: "hi" }), "Pi: moved. The selected message's text is on the clipboard.");
  assert.equal(core.navigatedMessage({ cancelled: true }), "Pi: navigation cancelled; nothing was written.");
});
