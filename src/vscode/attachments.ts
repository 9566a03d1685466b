import * as vscode from 'vscode';
import type { AttachedReference, LineSpan } from '../app/turn/attachments';

/**
 * A chat request's `references` (what the user attached, or named with `#` in the prompt) as
 * `src/app/turn/attachments.ts` takes them, in the order the user sees them.
 */
export function attachedReferences(references: readonly vscode.ChatPromptReference[]): AttachedReference[] {
  // VS Code lists references named in the prompt last one first; attached ones have no position.
  const ordered = [...references].sort((a, b) => (a.range?.[0] ?? -1) - (b.range?.[0] ?? -1));
  return ordered.map(toAttached);
}

function toAttached(reference: vscode.ChatPromptReference): AttachedReference {
  const value = reference.value;
  if (value instanceof vscode.Uri) return fromUri(value, undefined);
  if (value instanceof vscode.Location) return fromUri(value.uri, spanOf(value.range));
  const name = reference.modelDescription ?? reference.id;
  if (typeof value === 'string') return { kind: 'value', name, text: value };
  // A pasted image, say (`ChatReferenceBinaryData`).
  const mimeType = typeof value === 'object' && value !== null ? (value as { mimeType?: unknown }).mimeType : undefined;
  if (typeof mimeType === 'string') return { kind: 'unreadable', name, why: `it is ${mimeType} data, and Longrun sends the model text only` };
  return { kind: 'unreadable', name, why: 'Longrun cannot read this kind of attachment' };
}

function fromUri(uri: vscode.Uri, lines: LineSpan | undefined): AttachedReference {
  if (uri.scheme === 'file') return { kind: 'file', path: uri.fsPath, ...(lines ? { lines } : {}) };
  // An untitled editor, say: its text is what the user sees.
  const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === uri.toString());
  if (document) return { kind: 'document', name: uri.toString(), text: document.getText(), ...(lines ? { lines } : {}) };
  return { kind: 'unreadable', name: uri.toString(), why: `it is a ${uri.scheme}: resource, not a file Longrun can read` };
}

/** 1-based lines of a range; a range that ends at the start of a line does not take that line. */
function spanOf(range: vscode.Range): LineSpan {
  const start = range.start.line + 1;
  const endsAtLineStart = range.end.character === 0 && range.end.line > range.start.line;
  return { start, end: range.end.line + (endsAtLineStart ? 0 : 1) };
}
