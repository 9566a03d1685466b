import type { ImportanceConfig, TruncationConfig } from './config';
import type { FileLedger } from './file-ledger';
import type { CompactionEntry, LogRecord, Needle, NeedleLedger } from './log';
import type { Message, ToolCallPart } from './messages';
import type { SummaryRequestMessage } from './ports';

/**
 * What the compaction engine remembers between calls, so that a conversation that only grows costs
 * only what was added: each cache is keyed by objects that are never changed once made (messages and
 * their parts, compaction entries, configurations), and holds what was worked out from them.
 *
 * Whoever keeps the engine's state for a while owns one memo and passes it to every call (a
 * conversation, the compaction worker, a benchmark or eval run); a test makes its own. Two memos share
 * nothing, so what one conversation worked out never answers another's question.
 */
export class EngineMemo {
  /** Each message's content score under the configuration keyed by `ContentScore.key` (`importance.ts`). */
  readonly contentScores = new WeakMap<Message, ContentScore>();
  /** Each importance configuration's key: the content weights it scores with. */
  readonly importanceKeys = new WeakMap<ImportanceConfig, string>();
  /** A keyword list's distinct keywords in lower case. */
  readonly lowerKeywords = new WeakMap<readonly string[], readonly string[]>();
  /** A keyword list's patterns, one per distinct keyword. */
  readonly keywordPatterns = new WeakMap<readonly string[], readonly RegExp[]>();
  /** A tool message with some of its outputs replaced by stubs, by the stubs' signature (`pruning.ts`). */
  readonly stubbedMessages = new WeakMap<Message, Map<string, Message>>();
  /** What pruning compares of each tool call. */
  readonly callFacts = new WeakMap<ToolCallPart, CallFacts>();
  /** The stub of each write call's content (`written-content.ts`), for the token count it names. */
  readonly writtenStubs = new WeakMap<ToolCallPart, WrittenStub>();
  /** The message that carries each compaction entry's summary into the view (`history.ts`). */
  readonly summaryMessages = new WeakMap<CompactionEntry, Message>();
  /** The entry a summary message was last made for, and the message: a copy of it with other numbers shows the same message. */
  lastSummary: { readonly entry: CompactionEntry; readonly message: Message } | undefined;
  /** What each message of a summary request was rendered from (`summary-request.ts`). */
  readonly renderings = new WeakMap<SummaryRequestMessage, Rendering>();
  /** Each set of truncation limits' key. */
  readonly limitsKeys = new WeakMap<TruncationConfig, string>();
  /** Where a needle scan stood after a message (`needles.ts`). */
  readonly needleScans = new WeakMap<Message, NeedleScan>();
  /** The file ledger `ledgerOf` last made, and the file records it took in (`history.ts`). */
  fileLedger: RememberedFileLedger | undefined;
}

/** A file ledger and the file records it was made from, in order. */
export interface RememberedFileLedger {
  readonly files: LogRecord[];
  readonly ledger: FileLedger;
}

/** A message's content score (and a cheap bound on it) under the content weights `key` names. */
export interface ContentScore {
  readonly key: string;
  score?: number;
  bound?: number;
}

/** The lines of a file a read covers. */
export interface LineRange {
  readonly start: number;
  readonly end: number;
}

/** What pruning compares of a call answered by a `toolName` result: its key and the file it reads or writes. */
export interface CallFacts {
  readonly toolName: string;
  readonly key: string;
  readonly file?: { readonly access: 'read' | 'write'; readonly path: string; readonly range: LineRange };
}

/** A write call's stub: the line that stands for its content, and the input the model sees with it. */
export interface WrittenStub {
  /** The tokens of the content replaced, as the stub names them. */
  readonly tokens: number;
  readonly stub: string;
  /** The call's input with the stub in place of the content, as JSON. */
  readonly shown: string;
}

/** What a rendered message of a summary request was made from, so that its count is reused wherever it is numbered. */
export interface Rendering {
  readonly message: Message;
  readonly truncation: TruncationConfig;
  readonly header: string;
}

/** A needle ledger while messages are taken in: needles not capped yet. */
export interface Scan {
  readonly needles: Needle[];
  readonly openCalls: Map<string, string>;
  through: string | null;
}

/** Where a scan that started from the ledger `from` stood after a message, and the ledger it gave. */
export interface NeedleScan {
  readonly from: NeedleLedger;
  readonly scan: Scan;
  readonly ledger: NeedleLedger;
}
