import type { FileEvent, FileLedger } from './file-ledger';
import type {
  CACHE_TTLS,
  COMPACTION_REASONS,
  FILE_CHANGE_KINDS,
  NEEDLE_KINDS,
  PLAN_STATUSES,
  PRUNE_KINDS,
  SUBAGENT_ENDINGS,
  SUMMARY_ROLES,
  USAGE_PURPOSES,
} from './log-values';
import type { Message } from './messages';
import type { ProviderKind } from './provider-kind';

/**
 * The records of a conversation's append-only log, as types alone: every module of the engine may
 * import them, and this file imports no module that imports it back.
 */

export type CompactionReason = (typeof COMPACTION_REASONS)[number];
export type SummaryRole = (typeof SUMMARY_ROLES)[number];
export type FileChangeKind = (typeof FILE_CHANGE_KINDS)[number];
export type CacheTtl = (typeof CACHE_TTLS)[number];
export type UsagePurpose = (typeof USAGE_PURPOSES)[number];
export type PlanStatus = (typeof PLAN_STATUSES)[number];
export type SubagentEnding = (typeof SUBAGENT_ENDINGS)[number];

export interface CompactionEntry {
  readonly id: string;
  /** 1 for the first compaction of a conversation, then one more than the entry it replaces. */
  readonly round: number;
  readonly reason: CompactionReason;
  /** The summary as the model sees it after the prefix: model text, repaired, plus the file ledger. */
  readonly summary: string;
  /** The first message kept verbatim after the summary; null when nothing older was kept. */
  readonly firstKeptMessageId: string | null;
  /** Every message this compaction took out of the model's view. */
  readonly compactedMessageIds: readonly string[];
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** The cumulative file ledger at the time of the compaction. */
  readonly fileOperations: FileLedger;
  /** The summarizer that wrote the summary (or `extractive-fallback`). */
  readonly model: string;
  readonly durationMs: number;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  /** Role of the summary message in the model's view. */
  readonly summaryRole: SummaryRole;
  /** True when the summarizer failed and the summary was extracted without a model. */
  readonly fallback: boolean;
  /** True when the compaction freed less than the configured minimum share. */
  readonly lowGain: boolean;
  /** The latest user message, kept verbatim although part of its turn was summarized. */
  readonly splitTurn: boolean;
  /** Summarizer calls made: 1, or more when the request had to be split into batches. */
  readonly summarizerCalls: number;
  /** Focus instructions given with `/compact`, if any. */
  readonly focus?: string;
  /** Why the summarizer's text was not used, when `fallback` is true. */
  readonly failure?: string;
  /** The pruning made just before this summary, in the same compaction: undone with it. */
  readonly pruningId?: string;
  /**
   * The cumulative needle ledger (the user's constraints, errors hit, open tasks) through the last
   * message of the snapshot, so the next compaction scans only what came after. Absent in entries
   * from before it was kept: the next compaction then scans the whole log.
   */
  readonly needles?: NeedleLedger;
  /**
   * Set when the user wrote this summary by editing the one in force ("Edit summary"): the id of
   * the compaction it belongs to (the summarizer's entry, never another edit). Everything but the
   * summary is that compaction's, so the view is the same but for the summary, and undoing this
   * entry brings back the summary it replaced.
   */
  readonly editOf?: string;
  /**
   * The skills the agent had loaded in what this summary replaces (and those the summary before it
   * carried), put back word for word after the summary: a loaded skill is never summarized away.
   * Absent when there are none.
   */
  readonly skills?: readonly LoadedSkill[];
}

/** A skill's instructions as the `skill` tool gave them to the model (see `loaded-skills.ts`). */
export interface LoadedSkill {
  readonly name: string;
  /** The tool's whole result, kept word for word. */
  readonly text: string;
}

/** One request of the chat (or a command that changed the conversation), and the turn it continues. */
export interface TurnInfo {
  readonly id: string;
  /** The turn this one continues; null for the first turn (after the trunk, if there is one). */
  readonly parent: string | null;
  /** Milliseconds since the epoch. */
  readonly at: number;
  /** The chat (VS Code's chat session) the request came from, when known. */
  readonly chat?: string;
}

/**
 * A change the agent wrote to a file, kept so that it can be taken back exactly: the one stretch
 * where the texts before and after differ (`at`, what was there, what is there now), and a hash of
 * each whole text, to tell whether the file still holds what the agent wrote.
 */
export interface FileChange {
  readonly id: string;
  /** Workspace-relative path. */
  readonly path: string;
  readonly kind: FileChangeKind;
  readonly beforeHash: string;
  readonly afterHash: string;
  /** Where, in both texts, the stretch that differs starts (UTF-16 units). */
  readonly at: number;
  readonly removed: string;
  readonly inserted: string;
}

export type LogRecord = (
  | {
      readonly type: 'message';
      readonly message: Message;
      /** The message's token counts when it was appended, so that a reload need not count it again. */
      readonly tokens?: StoredTokens;
    }
  | { readonly type: 'compaction'; readonly entry: CompactionEntry }
  /** Tool outputs replaced by stubs in the model's view (see `pruning.ts`). */
  | { readonly type: 'pruning'; readonly entry: PruningEntry }
  /** Undoes the compaction or pruning with this id. */
  | { readonly type: 'undo'; readonly entryId: string; readonly at: number }
  /** Token usage a provider reported, to calibrate the count after a reload. */
  | { readonly type: 'usage'; readonly usage: ReportedUsage }
  /** A file operation, by the agent's tools or the user's editor, for the file ledger. */
  | { readonly type: 'file'; readonly event: FileEvent }
  /** A change the agent wrote to a file, with what it takes to take it back (see `file-changes.ts`). */
  | { readonly type: 'change'; readonly change: FileChange }
  /** The start of a turn: a request of the chat, continuing the turn it names (see `branches.ts`). */
  | { readonly type: 'turn'; readonly turn: TurnInfo }
  /** A command `run_command` ran, and how it ended: what a plan's evidence is checked against (see `plan-check.ts`). */
  | { readonly type: 'command'; readonly run: CommandRun }
  /** The agent's plan, as its `plan` tool last wrote it (see `plan.ts`). */
  | { readonly type: 'plan'; readonly plan: PlanUpdate }
  /** An account of turns the chat left behind, carried into this branch at the user's request (see `branch-account.ts`). */
  | { readonly type: 'account'; readonly account: CarriedAccount }
  /**
   * What a subagent the agent delegated a task to did (see `subagents.ts`): kept in the log of the
   * turn that started it, never in the model's view; only its report reaches the agent.
   */
  | { readonly type: 'subagent'; readonly subagent: SubagentEvent }
) & {
  /** The turn the record was made on; absent in the trunk (records from before turns were kept). */
  readonly turnId?: string;
};

export type ConversationLog = readonly LogRecord[];

/** A subagent started: the task it was given and what it may spend. */
export interface SubagentStart {
  readonly kind: 'start';
  /** The subagent's id, shared by its records. */
  readonly id: string;
  readonly task: string;
  /** The workspace paths it was told to start from, if any. */
  readonly scope?: readonly string[];
  /** The model it runs on, as its key (vendor/id) or name. */
  readonly model: string;
  /** Its step and token budgets (tokens: input and output of all its model calls). */
  readonly budget: { readonly steps: number; readonly tokens: number };
  /** Milliseconds since the epoch. */
  readonly at: number;
}

/** One message of a subagent's own conversation: its task, its answers, its tool calls and their results. */
export interface SubagentMessage {
  readonly kind: 'message';
  readonly id: string;
  readonly message: Message;
}

/** A subagent's window filled and it compacted its own conversation (the messages above stay in the log). */
export interface SubagentCompacted {
  readonly kind: 'compacted';
  readonly id: string;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** The summary that replaced its older messages; absent for a pruning alone. */
  readonly summary?: string;
  /** Tool outputs replaced by stubs. */
  readonly pruned: number;
}

/** A subagent ended: how, what it spent, and what the agent was given. */
export interface SubagentEnd {
  readonly kind: 'end';
  readonly id: string;
  readonly ending: SubagentEnding;
  /** Milliseconds since the epoch. */
  readonly at: number;
  readonly steps: number;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /** What the agent got back: the report, or the failure and what was done. */
  readonly result: string;
  /** What its model calls cost, when a price is known (in the price's currency, US dollars). */
  readonly cost?: number;
}

/** One record of a subagent's work. */
export type SubagentEvent = SubagentStart | SubagentMessage | SubagentCompacted | SubagentEnd;

/**
 * A command the agent ran and how it ended, kept apart from the tool's message, as file operations
 * are: a message a compaction took out of the view is held without its content, and a plan's
 * evidence is checked against every run on the branch, however old.
 */
export interface CommandRun {
  /** The command line as it was run. */
  readonly command: string;
  /** The exit code the shell reported; absent when it reported none, or the command was stopped. */
  readonly exitCode?: number;
  /** Set when the command was stopped (the time limit, or Stop) before it ended. */
  readonly stopped?: boolean;
  /** Milliseconds since the epoch. */
  readonly at: number;
}

/** What a step marked done rests on: files the agent changed, commands it ran. */
export interface PlanEvidence {
  /** Workspace-relative paths. */
  readonly files?: readonly string[];
  /** Command lines, as `run_command` was given them. */
  readonly commands?: readonly string[];
}

/** One step of the agent's plan, as the agent wrote it. */
export interface PlanStep {
  readonly step: string;
  readonly status: PlanStatus;
  readonly evidence?: PlanEvidence;
  readonly note?: string;
}

/** One call of the `plan` tool: the whole plan, written anew each time. */
export interface PlanUpdate {
  readonly id: string;
  readonly steps: readonly PlanStep[];
  /** Milliseconds since the epoch. */
  readonly at: number;
}

/**
 * What turns the chat left behind (a rewind, an edited request, a retry, a fork) had done, told in
 * a short text the user chose to carry into the branch they went on with: it joins their next
 * request, once.
 */
export interface CarriedAccount {
  readonly id: string;
  /** The account as the model gets it, within its bounds. */
  readonly text: string;
  /** The turns it tells of, oldest first. */
  readonly turns: readonly string[];
  /** Milliseconds since the epoch. */
  readonly at: number;
}

/**
 * Token counts stored with a message's record, by tokenizer name (`o200k_base`, `cl100k_base`): the
 * tokenizer's count of the message's text, tool names, arguments and outputs, without the framing
 * of `TokenOverheads`, which is added when the count is used (so a change of overheads does not
 * make stored counts wrong).
 */
export type StoredTokens = Readonly<Record<string, number>>;

export type NeedleKind = (typeof NEEDLE_KINDS)[number];

/** One fact the summary must carry. */
export interface Needle {
  readonly kind: NeedleKind;
  /** The words as written: a sentence of the user's, or a line of the error output. */
  readonly text: string;
  /** The message it was found in. */
  readonly messageId: string;
  /** Errors: the tool whose call failed. */
  readonly tool?: string;
  /** Errors: the tool and what the call acted on; a later success with the same key resolves it. */
  readonly key?: string;
  /** Errors: the message whose successful call resolved it; absent while unresolved. */
  readonly resolvedBy?: string;
}

/** The cumulative ledger, as stored in a compaction entry. */
export interface NeedleLedger {
  readonly version: 1;
  /** The last message taken into account; the next compaction scans the messages after it. */
  readonly through: string | null;
  /** Oldest first. */
  readonly needles: readonly Needle[];
  /** Tool calls seen without their result yet (call id → key), since the result may come later. */
  readonly openCalls: Readonly<Record<string, string>>;
}

/** Why an output was pruned, in the order the kinds are taken. */
export type PruneKind = (typeof PRUNE_KINDS)[number];

/**
 * One tool output replaced by a stub; or, of kind `written`, the input of a write call (the content
 * the file holds), whose text is replaced by the stub within an input the tool accepts.
 */
export interface PrunedOutput {
  /** The tool message that holds the output; for `written`, the assistant message that holds the call. */
  readonly messageId: string;
  readonly toolCallId: string;
  readonly toolName: string;
  readonly kind: PruneKind;
  /** What the model sees instead of the output (for `written`, instead of the content written). */
  readonly stub: string;
  /** The output's (or the input's) tokens when it was pruned (local count). */
  readonly tokens: number;
}

/** A pruning as the log records it. */
export interface PruningEntry {
  readonly id: string;
  readonly reason: CompactionReason;
  readonly outputs: readonly PrunedOutput[];
  /** The view's local count before and after this pruning. */
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
}

/** Token usage a provider reported for one model call. */
export interface ReportedUsage {
  /** The last message of the request/response the usage belongs to (usually the assistant reply). */
  readonly anchorMessageId: string;
  readonly inputTokens: number;
  readonly outputTokens: number;
  /**
   * The compaction state of the view the request was built from: the id of the compaction entry
   * in force when the request was sent (null before any). Taken when the request is sent, never
   * when the usage arrives, so a compaction (or an undo) that lands in between voids the report.
   * Entry ids are never reused, unlike round numbers after an undo.
   */
  readonly basis: string | null;
  /** The local count of the request as sent (messages, system prompt, tools), when known. */
  readonly localTokens?: number;
  /** The part of `localTokens` that is the messages' framing (see `TokenOverheads`), when known. */
  readonly localFraming?: number;
  /** The part of `localTokens` that is the system prompt and the tool definitions, when known. */
  readonly localFixed?: number;
  /** The model that answered, to learn its tokenizer's ratio to the local count. */
  readonly model?: string;
  /** The server counted far fewer tokens than were sent: it cut the prompt. Never calibrates. */
  readonly truncated?: boolean;
  /**
   * Of `inputTokens` (which counts every input token, cached or not), those the provider read from
   * its prompt cache, as it reported them; absent when it reported none.
   */
  readonly cacheReadTokens?: number;
  /** Of `inputTokens`, those the provider wrote to its prompt cache, as it reported them; absent when it reported none. */
  readonly cacheWriteTokens?: number;
  /** How long the request asked its cache writes to be kept (Anthropic's breakpoints), which sets their price. */
  readonly cacheTtl?: CacheTtl;
  /** When the request was sent, in milliseconds since the epoch: a provider's cache lives from its last request. */
  readonly at?: number;
  /** The wire format of the endpoint that answered (`openai-compatible` when it names none). */
  readonly provider?: ProviderKind;
  /** The model as the provider named it in its answer (else as it was asked for), to look up its price. */
  readonly modelId?: string;
  /** The provider a router sent the request to (OpenRouter's `provider`), to send the next ones there too. */
  readonly servedBy?: string;
  /** What the provider says the request cost, in US dollars, when it says (OpenRouter). */
  readonly cost?: number;
  /** The counts are Longrun's estimate, not the provider's (VS Code's models report none): no cost, no cache figures. */
  readonly estimated?: boolean;
  /**
   * Absent for the agent's requests; `summary` for a summarizer call of a compaction, `subagent` for a
   * request of a subagent (its own steps and summaries): neither is the view's prompt, so neither calibrates.
   */
  readonly purpose?: UsagePurpose;
  /** The subagent whose request it was (its id in its `subagent` records), for purpose `subagent`. */
  readonly subagent?: string;
}
