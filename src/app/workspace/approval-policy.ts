import type { TextEdit } from '../../llm/workspace-port';
import { applyReplacements, type Replacement } from './exact-edits';
import type { Protection } from './protected-paths';

/**
 * When the agent must ask before writing a file, and what the question says. Pure (no `vscode`).
 *
 * `longrun.agent.autoApproveEdits` lets ordinary edits through, never an edit of a protected file
 * (`protected-paths.ts`) nor one whose change is more than the replacements the model asked for
 * (see {@link changeIsOnlyTheReplacements}): the user then sees it and decides.
 */

export type ApprovalDecision =
  | { readonly ask: false }
  | {
      readonly ask: true;
      /** The question, with every reason it is asked although edits are auto-approved. */
      readonly question: string;
    };

export interface ApprovalInput {
  readonly verb: 'create' | 'edit';
  /** Workspace-relative path, as the model wrote it. */
  readonly path: string;
  readonly autoApprove: boolean;
  /** Set when the file is protected. */
  readonly protection?: Protection;
  /** False when the change is more than the replacements asked for. */
  readonly onlyTheReplacements: boolean;
}

export function decideApproval(input: ApprovalInput): ApprovalDecision {
  const reasons: string[] = [];
  if (input.protection) reasons.push(`This file is protected: ${input.protection.reason}`);
  if (!input.onlyTheReplacements) reasons.push('This change is more than the replacements the agent asked for; check what it removes.');
  if (reasons.length === 0 && input.autoApprove) return { ask: false };
  return { ask: true, question: [`Allow Longrun to ${input.verb} ${input.path}?`, ...reasons].join(' ') };
}

/**
 * Whether turning `before` into `after` replaces each edit's `oldText` by its `newText` and changes
 * nothing else: checked once against the replacements as located (each removes exactly its
 * `oldText`, line endings aside, and applying them gives `after`), and once independently of how
 * they were located, by redoing the replacements on both texts with line endings as LF.
 */
export function changeIsOnlyTheReplacements(
  before: string,
  after: string,
  edits: readonly TextEdit[],
  replacements: readonly Replacement[],
): boolean {
  if (edits.length !== replacements.length) return false;
  if (applyReplacements(before, replacements) !== after) return false;
  const unmatched = edits.map((e) => ({ oldText: toLf(e.oldText), newText: toLf(e.newText) }));
  for (const r of replacements) {
    const removed = toLf(before.slice(r.start, r.end));
    const at = unmatched.findIndex((e) => e.oldText === removed && e.newText === toLf(r.newText));
    if (at === -1) return false;
    unmatched.splice(at, 1);
  }
  return redoInLf(before, edits) === toLf(after);
}

/** The replacements done on the LF text by plain search; `undefined` when one is missing, repeated or overlapping. */
function redoInLf(before: string, edits: readonly TextEdit[]): string | undefined {
  const text = toLf(before);
  const spots = edits.map((e) => ({ oldText: toLf(e.oldText), newText: toLf(e.newText), at: text.indexOf(toLf(e.oldText)) }));
  if (spots.some((s) => s.oldText === '' || s.at === -1 || text.indexOf(s.oldText, s.at + 1) !== -1)) return undefined;
  spots.sort((a, b) => a.at - b.at);
  let result = '';
  let at = 0;
  for (const s of spots) {
    if (s.at < at) return undefined;
    result += text.slice(at, s.at) + s.newText;
    at = s.at + s.oldText.length;
  }
  return result + text.slice(at);
}

function toLf(text: string): string {
  return text.replace(/\r\n/g, '\n');
}
