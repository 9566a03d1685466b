import type { PrunedOutput, PruneKind, PruningEntry } from './log';

export type { PrunedOutput, PruneKind, PruningEntry };
import { stringifyOutput, type Message, type ToolCallPart, type ToolResultPart } from './messages';
import type { CallFacts, EngineMemo, LineRange, WrittenStub } from './engine-memo';
import { isRecord } from './errors';
import { isLoadedSkill } from './loaded-skills';
import { normalizePath } from './text';
import { TOOL_NAMES } from './tool-names';
import { isStubbableWrite, withWrittenStub, writtenChars, writtenStub } from './written-content';

/**
 * The cheap tier of compaction: tool outputs the model no longer needs are replaced in its view by
 * a one-line stub that says what the output was and how to get it back. No model is asked. Pruned,
 * in this order, oldest first within each kind:
 *
 * 1. duplicates: an output superseded by a later successful call with the same tool and arguments
 *    (a listing or a search run again), or a read of a file read again later over the same lines;
 * 2. stale reads: a read of a file that was created or edited after it;
 * 3. written content: the input of a successful write call older than the recent part a compaction
 *    keeps, whose file still holds what it wrote (`written-content.ts`): the content is on disk;
 * 4. old large outputs: outputs of at least `largeOutputTokens` in the part a summary would replace;
 * 5. only when the view does not fit the window: the largest outputs anywhere, cut to their first and
 *    last lines (`truncationCandidates`), so that the next request fits without waiting for a summary.
 *
 * Pruning happens only within a compaction, never between two: the prompt a provider has cached stays
 * as it was sent until the compaction changes it anyway.
 * A loaded skill's instructions are never pruned: they are an instruction of the conversation.
 *
 * The originals stay in the log: a pruning is a record the model's view applies, like a compaction
 * entry, and is undone the same way. Tools are told apart by name and arguments only, so any tool
 * (VS Code's included) is deduplicated; the file tools are also known by the path they touch.
 */

import { PRUNE_KINDS } from './log-values';

export { PRUNE_KINDS };

/** How file tools touch files: the path argument they read or change. */
export const FILE_TOOLS: Readonly<Record<string, 'read' | 'write'>> = {
  [TOOL_NAMES.readFile]: 'read',
  [TOOL_NAMES.createFile]: 'write',
  [TOOL_NAMES.editFile]: 'write',
};

/** An output that may be pruned, with what pruning it would free. */
export interface PruneCandidate {
  readonly output: PrunedOutput;
  /** Position of its message in the view. */
  readonly position: number;
  /** Tokens freed: the output's tokens less the stub's. */
  readonly saved: number;
}

export interface PruningOptions {
  /** Ids of the messages a summary would replace: only their outputs may be pruned for being old. */
  readonly oldMessageIds: ReadonlySet<string>;
  /** Outputs this large (tokens) and old are pruned in the third tier. */
  readonly largeOutputTokens: number;
  /** Outputs already pruned, as `messageId` + NUL + `toolCallId`: their text in the view is a stub. */
  readonly alreadyPruned: ReadonlySet<string>;
  /** The tokens of an output of a message (the tokenizer's count of its text, as the message count takes it). */
  readonly countOutput: (message: Message, part: ToolResultPart) => number;
  /**
   * The tokens of `stub`, what stands for `part`'s output (or, for a call, its input); `key` names
   * the stub among those the same part may get (a counter may remember the count by part and key,
   * as `countDerived` does).
   */
  readonly countStub: (part: ToolCallPart | ToolResultPart, key: string, stub: string) => number;
  /** Where what pruning works out of each call is remembered. */
  readonly memo: EngineMemo;
  /** Written content: what it takes to stub the input of write calls; absent, none is. */
  readonly writes?: WrittenOptions;
}

/** What stubbing written content takes (see `written-content.ts`). */
export interface WrittenOptions {
  /** The position in the view where the recent part a compaction keeps begins: calls before it are older. */
  readonly recentFrom: number;
  /** Whether the file at `path` still holds what the call of message `messageId` wrote. */
  readonly holds: (messageId: string, path: string) => boolean;
  /** The tokens of a call's input (the tokenizer's count of its JSON, as the message count takes it). */
  readonly countInput: (part: ToolCallPart) => number;
}

/** A stub is worth its line only when it frees at least this many tokens. */
const MIN_SAVED_TOKENS = 32;

const KIND_ORDER: Readonly<Record<PruneKind, number>> = { duplicate: 0, stale: 1, written: 2, old: 3, truncated: 4 };

/** The key of an already pruned output in `PruningOptions.alreadyPruned`. */
export function prunedKey(messageId: string, toolCallId: string): string {
  return `${messageId}\u0000${toolCallId}`;
}

/** Every output of `view` that may be pruned, in the order they are taken: by kind, then oldest first. */
export function pruningCandidates(view: readonly Message[], options: PruningOptions): PruneCandidate[] {
  const outputs = collectOutputs(view, options.memo);
  const lastByKey = new Map<string, number>();
  const readsByPath = new Map<string, Array<{ at: number; range: LineRange }>>();
  const lastWrite = new Map<string, number>();
  for (const o of outputs) {
    if (!o.ok) continue;
    lastByKey.set(o.key, o.at);
    if (o.file?.access === 'read') pushTo(readsByPath, o.file.path, { at: o.at, range: o.file.range });
    if (o.file?.access === 'write') lastWrite.set(o.file.path, o.at);
  }

  const candidates: PruneCandidate[] = [];
  for (const o of outputs) {
    if (o.summary || o.instructions || options.alreadyPruned.has(prunedKey(o.messageId, o.part.toolCallId))) continue;
    const kind = kindOf(o, { lastByKey, readsByPath, lastWrite }, options);
    if (!kind) continue;
    // An old output is counted only when it may be large: a token holds at least one character.
    const text = stringifyOutput(o.part.output);
    if (kind === 'old' && text.length < options.largeOutputTokens) continue;
    const tokens = options.countOutput(o.message, o.part);
    if (kind === 'old' && tokens < options.largeOutputTokens) continue;
    const stub = stubText({ toolName: o.part.toolName, toolCallId: o.part.toolCallId, kind, tokens, ...(o.file ? { path: o.file.path } : {}) });
    const saved = tokens - options.countStub(o.part, `stub\u0000${kind}\u0000${tokens}`, stub);
    if (saved < MIN_SAVED_TOKENS) continue;
    candidates.push({
      output: { messageId: o.messageId, toolCallId: o.part.toolCallId, toolName: o.part.toolName, kind, stub, tokens },
      position: o.at,
      saved,
    });
  }
  if (options.writes) candidates.push(...writtenCandidates(view, options, options.writes));
  return candidates.sort((a, b) => KIND_ORDER[a.output.kind] - KIND_ORDER[b.output.kind] || a.position - b.position);
}

/**
 * The inputs of successful write calls older than the recent part whose files still hold what they
 * wrote, each with what its stub frees.
 */
function writtenCandidates(view: readonly Message[], options: PruningOptions, writes: WrittenOptions): PruneCandidate[] {
  const calls = new Map<string, { message: Message; at: number; part: ToolCallPart }>();
  const candidates: PruneCandidate[] = [];
  view.forEach((message, at) => {
    for (const part of message.content) {
      if (part.type === 'tool-call') {
        if (at < writes.recentFrom && message.role === 'assistant' && isStubbableWrite(part.toolName)) {
          calls.set(part.toolCallId, { message, at, part });
        }
        continue;
      }
      if (part.type !== 'tool-result' || !succeeded(part)) continue;
      const call = calls.get(part.toolCallId);
      calls.delete(part.toolCallId);
      const candidate = call && writtenCandidate(call, options, writes);
      if (candidate) candidates.push(candidate);
    }
  });
  return candidates;
}

function writtenCandidate(
  call: { readonly message: Message; readonly at: number; readonly part: ToolCallPart },
  options: PruningOptions,
  writes: WrittenOptions,
): PruneCandidate | undefined {
  const { message, part } = call;
  if (options.alreadyPruned.has(prunedKey(message.id, part.toolCallId))) return undefined;
  const path = filePathOf(part.toolName, part.input);
  if (path === undefined || !writes.holds(message.id, path)) return undefined;
  // Counted only when it may be worth a stub: a token holds at least one character.
  if (writtenChars(part.toolName, part.input) < MIN_SAVED_TOKENS * 2) return undefined;
  const tokens = writes.countInput(part);
  const made = writtenStubOf(part, tokens, options.memo);
  if (!made) return undefined;
  const { stub } = made;
  const saved = tokens - options.countStub(part, `stub\u0000written\u0000${tokens}`, made.shown);
  if (saved < MIN_SAVED_TOKENS) return undefined;
  return {
    output: { messageId: message.id, toolCallId: part.toolCallId, toolName: part.toolName, kind: 'written', stub, tokens },
    position: call.at,
    saved,
  };
}

/** A write call's stub for `tokens`, made once per call (and count) and remembered in `memo`. */
function writtenStubOf(part: ToolCallPart, tokens: number, memo: EngineMemo): WrittenStub | undefined {
  const known = memo.writtenStubs.get(part);
  if (known?.tokens === tokens) return known;
  const stub = writtenStub(part.toolName, part.toolCallId, part.input, tokens);
  if (stub === undefined) return undefined;
  const made: WrittenStub = { tokens, stub, shown: stringifyOutput(withWrittenStub(part.toolName, part.input, stub)) };
  memo.writtenStubs.set(part, made);
  return made;
}

/** Whether a tool succeeded: Longrun's tools answer a failure with text starting "Error:" rather than an error result. */
function succeeded(part: ToolResultPart): boolean {
  return !part.isError && !(typeof part.output === 'string' && part.output.startsWith('Error:'));
}

/**
 * The candidates to take, in order, until they free `excess` tokens; all of them when together they
 * free less (the caller then knows pruning alone is not enough).
 */
export function planPruning(candidates: readonly PruneCandidate[], excess: number): { readonly taken: PruneCandidate[]; readonly freed: number } {
  const taken: PruneCandidate[] = [];
  let freed = 0;
  for (const candidate of candidates) {
    if (freed >= excess) break;
    taken.push(candidate);
    freed += candidate.saved;
  }
  return { taken, freed };
}

/**
 * How many of the outputs of a pruning are superseded (duplicates and stale reads), how many old, how
 * many cut to their head and tail to fit the window, and how many write calls' content was stubbed.
 */
export function prunedCounts(outputs: readonly PrunedOutput[]): {
  readonly superseded: number;
  readonly old: number;
  readonly truncated: number;
  readonly written: number;
} {
  let old = 0;
  let truncated = 0;
  let written = 0;
  for (const o of outputs) {
    if (o.kind === 'old') old++;
    else if (o.kind === 'truncated') truncated++;
    else if (o.kind === 'written') written++;
  }
  return { superseded: outputs.length - old - truncated - written, old, truncated, written };
}

export interface TruncationOptions {
  /** Tokens to free. */
  readonly excess: number;
  /** Outputs not to cut, as `prunedKey` gives them: those already pruned, or about to be. */
  readonly exclude: ReadonlySet<string>;
  readonly countOutput: (message: Message, part: ToolResultPart) => number;
  readonly countStub: (part: ToolResultPart, key: string, stub: string) => number;
  readonly memo: EngineMemo;
}

/** A cut output keeps at least this many tokens of its head and tail. */
export const MIN_TRUNCATED_TOKENS = 400;
/** About a line of code: what a cut at a line end may keep beyond the size asked. */
const LINE_SLACK_TOKENS = 8;
/** Of what a cut output keeps, this share is its head; the rest its tail (a log's end says how it ended). */
const HEAD_SHARE = 0.7;

/**
 * The largest tool outputs of `view`, cut to their first and last lines so that together they free
 * `options.excess` tokens: every output larger than one common size is cut down to it, that size being
 * the largest that frees enough (never under `MIN_TRUNCATED_TOKENS`); so no output is cut harder than
 * another. The stub keeps the head and the tail and says, between them, how much was cut and how to
 * get it back. All of them, at that floor, when that is still not enough.
 */
export function truncationCandidates(view: readonly Message[], options: TruncationOptions): PruneCandidate[] {
  const sized: Array<{ o: Output; tokens: number }> = [];
  for (const o of collectOutputs(view, options.memo)) {
    if (o.summary || o.instructions || options.exclude.has(prunedKey(o.messageId, o.part.toolCallId))) continue;
    if (stringifyOutput(o.part.output).length < MIN_TRUNCATED_TOKENS * 2) continue;
    const tokens = options.countOutput(o.message, o.part);
    if (tokens > MIN_TRUNCATED_TOKENS + MIN_SAVED_TOKENS) sized.push({ o, tokens });
  }
  if (sized.length === 0 || options.excess <= 0) return [];
  const freedAt = (cap: number): number => sized.reduce((sum, s) => sum + Math.max(0, s.tokens - cap), 0);
  let cap = MIN_TRUNCATED_TOKENS;
  if (freedAt(cap) > options.excess) {
    // The largest size that still frees enough: a binary search over whole tokens.
    let low = MIN_TRUNCATED_TOKENS;
    let high = Math.max(...sized.map((s) => s.tokens));
    while (high - low > 1) {
      const middle = Math.floor((low + high) / 2);
      if (freedAt(middle) >= options.excess) low = middle;
      else high = middle;
    }
    cap = low;
  }
  // The note between head and tail, and cuts made at line ends, cost a little: the size is lowered by
  // what the stubs fell short, a few times at most.
  let candidates = stubsAt(sized, cap, options);
  for (let pass = 0; pass < 5 && cap > MIN_TRUNCATED_TOKENS; pass++) {
    const short = options.excess - candidates.reduce((sum, c) => sum + c.saved, 0);
    if (short <= 0) break;
    const cutCount = Math.max(1, sized.filter((s) => s.tokens > cap).length);
    // A line more than the shortfall each, since cuts fall at line ends.
    cap = Math.max(MIN_TRUNCATED_TOKENS, cap - Math.ceil(short / cutCount) - LINE_SLACK_TOKENS);
    candidates = stubsAt(sized, cap, options);
  }
  return candidates.sort((a, b) => b.output.tokens - a.output.tokens || a.position - b.position);
}

function stubsAt(sized: ReadonlyArray<{ o: Output; tokens: number }>, cap: number, options: TruncationOptions): PruneCandidate[] {
  const candidates: PruneCandidate[] = [];
  for (const { o, tokens } of sized) {
    if (tokens - cap < MIN_SAVED_TOKENS) continue;
    const stub = truncatedText(o, tokens, cap);
    const saved = tokens - options.countStub(o.part, `stub\u0000truncated\u0000${tokens}\u0000${cap}`, stub);
    if (saved < MIN_SAVED_TOKENS) continue;
    candidates.push({
      output: { messageId: o.messageId, toolCallId: o.part.toolCallId, toolName: o.part.toolName, kind: 'truncated', stub, tokens },
      position: o.at,
      saved,
    });
  }
  return candidates;
}

/** The output's first and last lines within about `keep` tokens, and between them what was cut and how to get it back. */
function truncatedText(o: Output, tokens: number, keep: number): string {
  const text = stringifyOutput(o.part.output);
  const charsPerToken = text.length / Math.max(1, tokens);
  const headChars = Math.floor(keep * HEAD_SHARE * charsPerToken);
  const tailChars = Math.floor(keep * (1 - HEAD_SHARE) * charsPerToken);
  // Cut at line ends, unless a line is longer than what is kept of it.
  const headEnd = lineEndBefore(text, headChars);
  const tailStart = lineStartAfter(text, text.length - tailChars);
  const head = text.slice(0, headEnd);
  const tail = text.slice(Math.max(headEnd, tailStart));
  const cutTokens = Math.max(0, tokens - keep);
  const where = o.file ? ` Re-read ${JSON.stringify(o.file.path)} for the lines in between, or` : ' To see all of it,';
  const note = `[Pruned by Longrun: about ${thousands(cutTokens)} of this ${o.part.toolName} output's ${thousands(tokens)} tokens were cut here to fit the context window.${where} call recall with query "${o.part.toolCallId}".]`;
  return `${head}\n${note}\n${tail}`;
}

function lineEndBefore(text: string, at: number): number {
  const end = text.lastIndexOf('\n', at);
  return end > at / 2 ? end : at;
}

function lineStartAfter(text: string, at: number): number {
  const start = text.indexOf('\n', at);
  return start >= 0 && start - at < (text.length - at) / 2 ? start + 1 : at;
}

/**
 * `message` with the outputs named in `stubs` (by tool call id) replaced by their stubs, or, in an
 * assistant message, the content its write calls carry (see `withWrittenStub`); the same object when
 * none applies. The same message and stubs always give the same object under one `memo`, so that a
 * token counter that remembers messages by identity counts each pruned message once.
 */
export function withStubs(message: Message, stubs: ReadonlyMap<string, string>, memo: EngineMemo): Message {
  if (message.role === 'assistant') return withWrittenStubs(message, stubs, memo);
  if (message.role !== 'tool') return message;
  let signature = '';
  for (const part of message.content) {
    if (part.type !== 'tool-result') continue;
    const stub = stubs.get(part.toolCallId);
    if (stub !== undefined) signature += `${part.toolCallId}\u0000${stub}\u0001`;
  }
  if (signature === '') return message;
  let made = memo.stubbedMessages.get(message);
  if (!made) memo.stubbedMessages.set(message, (made = new Map()));
  let copy = made.get(signature);
  if (!copy) {
    copy = {
      ...message,
      content: message.content.map((part) => {
        if (part.type !== 'tool-result') return part;
        const stub = stubs.get(part.toolCallId);
        return stub === undefined ? part : { ...part, output: stub };
      }),
    };
    made.set(signature, copy);
  }
  return copy;
}

function withWrittenStubs(message: Message, stubs: ReadonlyMap<string, string>, memo: EngineMemo): Message {
  let signature = '';
  for (const part of message.content) {
    if (part.type !== 'tool-call') continue;
    const stub = stubs.get(part.toolCallId);
    if (stub !== undefined) signature += `${part.toolCallId}\u0000${stub}\u0001`;
  }
  if (signature === '') return message;
  let made = memo.stubbedMessages.get(message);
  if (!made) memo.stubbedMessages.set(message, (made = new Map()));
  let copy = made.get(signature);
  if (!copy) {
    copy = {
      ...message,
      content: message.content.map((part) => {
        if (part.type !== 'tool-call') return part;
        const stub = stubs.get(part.toolCallId);
        return stub === undefined ? part : { ...part, input: withWrittenStub(part.toolName, part.input, stub) };
      }),
    };
    made.set(signature, copy);
  }
  return copy;
}

/** The path a file tool's arguments name, normalized; undefined for other tools. */
export function filePathOf(toolName: string, input: unknown): string | undefined {
  if (FILE_TOOLS[toolName] === undefined || !isRecord(input) || typeof input.path !== 'string') return undefined;
  return normalizePath(input.path.trim());
}

/**
 * A tool's name and arguments as one string, the same for calls that ask the same thing: keys
 * sorted, text trimmed, paths normalized.
 */
export function callKey(toolName: string, input: unknown): string {
  return `${toolName}\u0000${canonical(input, '')}`;
}

// ---------------------------------------------------------------------------------------------

interface Output {
  readonly message: Message;
  readonly messageId: string;
  readonly at: number;
  readonly part: ToolResultPart;
  readonly key: string;
  /** Whether the tool succeeded: only a successful call supersedes or changes anything. */
  readonly ok: boolean;
  readonly summary: boolean;
  /** A loaded skill: an instruction of the conversation, never pruned (see `loaded-skills.ts`). */
  readonly instructions: boolean;
  readonly file?: CallFacts['file'];
}

/** The kinds an output's stub may have (`written` stands for a call's input). */
type OutputKind = Exclude<PruneKind, 'written'>;

interface Later {
  readonly lastByKey: ReadonlyMap<string, number>;
  readonly readsByPath: ReadonlyMap<string, ReadonlyArray<{ at: number; range: LineRange }>>;
  readonly lastWrite: ReadonlyMap<string, number>;
}

function kindOf(o: Output, later: Later, options: PruningOptions): OutputKind | undefined {
  if (o.file?.access === 'read') {
    const range = o.file.range;
    const reread = later.readsByPath.get(o.file.path)?.some((r) => r.at > o.at && r.range.start <= range.start && r.range.end >= range.end);
    if (reread) return 'duplicate';
    if ((later.lastWrite.get(o.file.path) ?? -1) > o.at) return 'stale';
  } else if ((later.lastByKey.get(o.key) ?? -1) > o.at) {
    return 'duplicate';
  }
  return options.oldMessageIds.has(o.messageId) ? 'old' : undefined;
}

/** Every tool output of the view with the call it answers (the nearest call of its id before it). */
function collectOutputs(view: readonly Message[], memo: EngineMemo): Output[] {
  const calls = new Map<string, ToolCallPart>();
  const outputs: Output[] = [];
  view.forEach((message, at) => {
    for (const part of message.content) {
      if (part.type === 'tool-call') calls.set(part.toolCallId, part);
      if (part.type !== 'tool-result') continue;
      const facts = callFacts(part.toolName, calls.get(part.toolCallId), memo);
      outputs.push({
        message,
        messageId: message.id,
        at,
        part,
        key: facts.key,
        ok: succeeded(part),
        summary: message.summaryOf !== undefined,
        instructions: isLoadedSkill(part),
        ...(facts.file ? { file: facts.file } : {}),
      });
    }
  });
  return outputs;
}

/**
 * What pruning compares of a call answered by a `toolName` result: its key and the file it reads or
 * writes. Remembered per call, since parts are never changed and every compaction looks at them all.
 */
function callFacts(toolName: string, call: ToolCallPart | undefined, memo: EngineMemo): CallFacts {
  const known = call && memo.callFacts.get(call);
  if (known?.toolName === toolName) return known;
  const input = call?.input;
  const access = FILE_TOOLS[toolName];
  const path = filePathOf(toolName, input);
  const facts: CallFacts = {
    toolName,
    key: callKey(toolName, input),
    ...(access && path !== undefined ? { file: { access, path, range: lineRange(input) } } : {}),
  };
  if (call) memo.callFacts.set(call, facts);
  return facts;
}

function lineRange(input: unknown): LineRange {
  const o = isRecord(input) ? input : {};
  const start = typeof o.startLine === 'number' ? o.startLine : 1;
  const end = typeof o.endLine === 'number' ? o.endLine : Number.POSITIVE_INFINITY;
  return { start, end };
}

function stubText(o: { toolName: string; toolCallId: string; kind: OutputKind; tokens: number; path?: string }): string {
  const what = `this ${o.toolName} output (${thousands(o.tokens)} tokens)`;
  const recallCall = `call recall with query "${o.toolCallId}"`;
  if (o.path !== undefined) {
    const path = JSON.stringify(o.path);
    switch (o.kind) {
      case 'duplicate':
        return `[Pruned by Longrun: ${what} was superseded, the file was read again later. Re-read ${path} if you need it, or call recall with path ${path}.]`;
      case 'stale':
        return `[Pruned by Longrun: ${what} was out of date, the file was changed after this read. Re-read ${path} for its current content; recall with path ${path} gives this old version.]`;
      case 'old':
      case 'truncated':
        return `[Pruned by Longrun: ${what} was old and large. Re-read ${path} if you need it, or call recall with path ${path}.]`;
    }
  }
  switch (o.kind) {
    case 'duplicate':
      return `[Pruned by Longrun: ${what} was superseded, the same call was made again later. To see this one again, ${recallCall}.]`;
    case 'stale':
    case 'old':
    case 'truncated':
      return `[Pruned by Longrun: ${what} was old and large. To see it again, ${recallCall}.]`;
  }
}

const PATH_KEYS: ReadonlySet<string> = new Set(['path', 'filePath', 'file', 'uri', 'dir', 'directory', 'cwd']);

function canonical(value: unknown, key: string): string {
  if (typeof value === 'string') return JSON.stringify(PATH_KEYS.has(key) ? normalizePath(value.trim()) : value.trim());
  if (Array.isArray(value)) return `[${value.map((v) => canonical(v, '')).join(',')}]`;
  if (isRecord(value)) {
    const keys = Object.keys(value)
      .filter((k) => value[k] !== undefined)
      .sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonical(value[k], k)}`).join(',')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** 12,400: as `toLocaleString('en-US')` writes it, without its cost for each of thousands of stubs. */
function thousands(n: number): string {
  return String(Math.round(n)).replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

function pushTo<K, V>(map: Map<K, V[]>, key: K, value: V): void {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
}
