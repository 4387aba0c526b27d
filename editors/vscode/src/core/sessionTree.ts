/**
 * One load of a session's tree as the side bar shows it: `pi/getTree`, then the entries of
 * the rows that show more than their preview (summaries' token counts, tool-call targets, the
 * placeholders of masking edits) in one `pi/getEntries`, and from them the row details and the
 * masking marks. Runs without VS Code (the node tests load trees of the real daemon with it).
 */
import type { TreeResult } from "../protocol";
import type { PiClient } from "./client";
import { type EditInfo, editInfo, isMaskingEdit, maskedTargets, maskMarks } from "./masking";
import { type EntryDetail, entryDetail, isSummaryNode, toolNames } from "./nodes";
import { TreeModel } from "./treeModel";

/** At most this many entries are fetched for tool targets, token counts and placeholders (the rest show less). */
export const DETAIL_LIMIT = 2000;

/** A loaded tree: the model the views draw, and the tool results masked in the leaf's context. */
export interface LoadedTree {
  tree: TreeResult;
  model: TreeModel;
  /** Target id → the edit masking it (Pi 1.6.0's projection of the leaf). */
  masked: Map<string, EditInfo>;
}

/** Loads `sessionId`'s tree with its details and marks (`groupTurns`, as the side bar shows it). */
export async function loadTree(pi: PiClient, sessionId: string): Promise<LoadedTree> {
  const tree = await pi.getTree(sessionId);
  const entries = await fetchEntries(pi, sessionId, tree);
  const { details, edits } = digest(tree, entries);
  const firstKept = (compactionId: string) => details.get(compactionId)?.firstKept;
  const nodes = tree.nodes ?? [];
  const marks = maskMarks(nodes, tree.leafId, edits, firstKept);
  const masked = maskedTargets(nodes, tree.leafId, edits, firstKept);
  return { tree, model: new TreeModel(tree, { groupTurns: true, details, marks }), masked };
}

async function fetchEntries(pi: PiClient, sessionId: string, tree: TreeResult): Promise<Map<string, Record<string, unknown>>> {
  const wanted = (tree.nodes ?? []).filter(
    (node) => isSummaryNode(node) || toolNames(node).length > 0 || isMaskingEdit(node),
  );
  const ids = wanted.slice(-DETAIL_LIMIT).map((node) => node.id);
  const out = new Map<string, Record<string, unknown>>();
  const entries = ids.length === 0 ? [] : await pi.getEntries(sessionId, ids).catch(() => []);
  for (const entry of entries as unknown as Array<Record<string, unknown>>) {
    if (typeof entry.id === "string") {
      out.set(entry.id, entry);
    }
  }
  return out;
}

/** Row details (tool targets, token counts) and every context edit, from the fetched entries. */
function digest(
  tree: TreeResult,
  entries: ReadonlyMap<string, Record<string, unknown>>,
): { details: Map<string, EntryDetail>; edits: Map<string, EditInfo> } {
  const details = new Map<string, EntryDetail>();
  const edits = new Map<string, EditInfo>();
  for (const node of tree.nodes ?? []) {
    const detail = entryDetail(entries.get(node.id));
    if (detail !== undefined) {
      details.set(node.id, detail);
    }
    const edit = editInfo(node, entries.get(node.id));
    if (edit !== undefined) {
      edits.set(node.id, edit);
    }
  }
  return { details, edits };
}
