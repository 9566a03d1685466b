import { splitLines } from '../../core/lines';
import { capText } from '../../llm/result-cap';
import { ToolFailure, type LineRange, type WorkspacePort } from '../../llm/workspace-port';
import { toWorkspaceRelative, type WorkspaceRoot } from '../workspace/path-guard';

/**
 * What the user attached to a chat request (files, ranges of files, values), resolved into text
 * for the user message the model receives: each in an `<attachment>` block with its path and line
 * numbers, under the size cap of a tool result. Files are read like `read_file` reads them
 * (inside the workspace folders only, unsaved editor text included, binary files refused), so an
 * attachment can show the model nothing its own tools could not. Free of `vscode`: the extension
 * turns `request.references` into {@link AttachedReference}s.
 */

/** 1-based, inclusive line numbers. */
export interface LineSpan {
  readonly start: number;
  readonly end: number;
}

/** One attachment of a chat request, as the editor describes it. */
export type AttachedReference =
  /** A file on disk, whole or a range of its lines; `path` is absolute. */
  | { readonly kind: 'file'; readonly path: string; readonly lines?: LineSpan }
  /** An open document that is not a file on disk (an untitled editor), with its text. */
  | { readonly kind: 'document'; readonly name: string; readonly text: string; readonly lines?: LineSpan }
  /** A value given as text (a string reference). */
  | { readonly kind: 'value'; readonly name: string; readonly text: string }
  /** Something Longrun cannot turn into text; `why` says what it is. */
  | { readonly kind: 'unreadable'; readonly name: string; readonly why: string };

/** An attachment as the model receives it. */
export interface Attachment {
  /** The `<attachment>` block. */
  readonly block: string;
  /** The workspace-relative path of a file whose content the block holds, for the file ledger. */
  readonly readPath?: string;
}

/** Where attachments are read from, and how much of them a request may carry. */
export interface AttachmentOptions {
  /** The workspace folders: a file outside them is not read. */
  readonly roots: readonly WorkspaceRoot[];
  /** How files are read: the agent's own workspace port. */
  readonly files: Pick<WorkspacePort, 'readFile'>;
  /** Longest block content, as for a tool result. */
  readonly maxChars: number;
  /** Most content all of a request's attachments may carry together. */
  readonly maxTotalChars: number;
  /** The request's: Stop ends the reading. */
  readonly signal: AbortSignal;
}

/**
 * The attachments of a request, in order, each once. What cannot be included (a binary file, a
 * folder, a file outside the workspace, one over the request's total) becomes a block with a note
 * saying why, so that the model knows what the user meant to show it.
 */
export async function resolveAttachments(references: readonly AttachedReference[], options: AttachmentOptions): Promise<Attachment[]> {
  const out: Attachment[] = [];
  const seen = new Set<string>();
  let total = 0;
  for (const reference of references) {
    const key = JSON.stringify(reference.kind === 'unreadable' ? [reference.kind, reference.name] : reference);
    if (seen.has(key)) continue;
    seen.add(key);
    options.signal.throwIfAborted();
    const room = Math.min(options.maxChars, options.maxTotalChars - total);
    // A sliver of a file would show the model less than its name does: say it did not fit.
    if (room < Math.min(MIN_ROOM, options.maxChars)) {
      out.push(
        noteBlock(
          attributesOf(reference, options.roots),
          `the attachments before it fill the ${options.maxTotalChars.toLocaleString('en-US')} characters one message may carry`,
        ),
      );
      continue;
    }
    const attachment = await resolveOne(reference, room, options);
    total += attachment.contentChars;
    out.push(attachment.readPath !== undefined ? { block: attachment.block, readPath: attachment.readPath } : { block: attachment.block });
  }
  return out;
}

/** The blocks of a request's attachments, after its prompt, as one text. */
export function renderAttachments(attachments: readonly Attachment[]): string {
  return attachments.map((a) => a.block).join('\n\n');
}

type Resolved = Attachment & { readonly contentChars: number };

async function resolveOne(reference: AttachedReference, room: number, options: AttachmentOptions): Promise<Resolved> {
  switch (reference.kind) {
    case 'file':
      return resolveFile(reference.path, reference.lines, room, options);
    case 'document': {
      const lines = splitLines(reference.text);
      const span = clampSpan(reference.lines, lines.length);
      return numberedBlock({ name: reference.name }, lines.slice(span.start - 1, span.end), span.start, lines.length, room, false);
    }
    case 'value': {
      const content = capText(reference.text, room, '');
      return { block: block({ name: reference.name }, content), contentChars: content.length };
    }
    case 'unreadable':
      return { ...noteBlock({ name: reference.name }, reference.why), contentChars: 0 };
  }
}

async function resolveFile(absolute: string, span: LineSpan | undefined, room: number, options: AttachmentOptions): Promise<Resolved> {
  const relative = toWorkspaceRelative(options.roots, absolute);
  if (relative === undefined) {
    return { ...noteBlock({ path: absolute }, 'the file is outside the workspace folders, which Longrun does not read'), contentChars: 0 };
  }
  const range: LineRange = span ? { start: span.start, end: span.end } : {};
  try {
    const read = await options.files.readFile(relative, range, options.signal);
    const lines = splitLines(read.text);
    const resolved = numberedBlock({ path: read.path }, lines, read.startLine, read.totalLines, room, read.truncated);
    return { ...resolved, readPath: read.path };
  } catch (error) {
    if (!(error instanceof ToolFailure)) throw error;
    return { ...noteBlock({ path: relative }, error.message.replace(/\.$/, '')), contentChars: 0 };
  }
}

/** Room kept in a block for the note that says it was cut. */
const NOTE_RESERVE = 200;
/** The least room worth giving an attachment once earlier ones took most of a message's total. */
const MIN_ROOM = 2 * NOTE_RESERVE;

/**
 * `lines` (the file's lines from `first` on) numbered as `read_file` numbers them (`12| code`),
 * as many as fit in `room`, with the shown range in the `lines` attribute and, when cut, a note
 * saying where the agent can read on.
 */
function numberedBlock(
  attributes: Record<string, string>,
  lines: readonly string[],
  first: number,
  totalLines: number,
  room: number,
  alreadyCut: boolean,
): Resolved {
  if (totalLines === 0) return { block: block({ ...attributes, lines: '0' }, '(empty file)'), contentChars: 0 };
  const budget = Math.max(0, room - NOTE_RESERVE);
  const shown: string[] = [];
  let used = 0;
  for (const [index, line] of lines.entries()) {
    const numbered = `${first + index}| ${line}`;
    if (used + numbered.length + 1 > budget) {
      if (shown.length === 0) shown.push(`${numbered.slice(0, Math.max(0, budget - 1))}…`);
      break;
    }
    shown.push(numbered);
    used += numbered.length + 1;
  }
  const last = first + shown.length - 1;
  const cut = alreadyCut || shown.length < lines.length;
  const body = [...shown];
  if (cut) body.push(`[Truncated at the size limit: lines ${first}-${last} of ${totalLines} shown. read_file can read on from line ${last + 1}.]`);
  const content = body.join('\n');
  return { block: block({ ...attributes, lines: `${first}-${last}` }, content), contentChars: content.length };
}

function noteBlock(attributes: Record<string, string>, why: string): Attachment {
  return { block: block(attributes, `[Not included: ${why}.]`) };
}

function block(attributes: Record<string, string>, content: string): string {
  const attrs = Object.entries(attributes)
    .map(([name, value]) => ` ${name}="${escapeAttribute(value)}"`)
    .join('');
  return `<attachment${attrs}>\n${content}\n</attachment>`;
}

function attributesOf(reference: AttachedReference, roots: readonly WorkspaceRoot[]): Record<string, string> {
  if (reference.kind === 'file') return { path: toWorkspaceRelative(roots, reference.path) ?? reference.path };
  return { name: reference.name };
}

/** A span within a text of `total` lines; the whole text when none is given. */
function clampSpan(span: LineSpan | undefined, total: number): LineSpan {
  if (!span) return { start: 1, end: total };
  const start = Math.min(Math.max(1, span.start), Math.max(1, total));
  return { start, end: Math.min(total, Math.max(start, span.end)) };
}

function escapeAttribute(value: string): string {
  return value.replace(/[&"<>\n\r]/g, (c) => ({ '&': '&amp;', '"': '&quot;', '<': '&lt;', '>': '&gt;', '\n': ' ', '\r': ' ' })[c] ?? c);
}
