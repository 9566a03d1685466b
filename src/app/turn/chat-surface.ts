import type { LanguageModel } from 'ai';
import type { AgentPrefix } from '../../llm/ai-summarizer';
import type { CompactionEntry } from '../../core/history';
import type { ReportedUsage } from '../../core/usage-calibration';
import type { EditorToolsPort } from '../../llm/editor-tools';
import type { LongrunTelemetry } from '../../llm/telemetry';
import type { CommandPort, WorkspacePort } from '../../llm/workspace-port';
import type { AttachedReference } from './attachments';
import type { TurnMetadata } from './chat-history';
import type { Conversation } from '../conversation/conversation';
import type { InstructionSource } from './instructions';
import type { WorkspaceRoot } from '../workspace/path-guard';
import type { ProviderKind } from '../../core/provider-kind';
import type { UsageView } from '../usage/usage-text';
import type { RevertFiles } from './revert-changes';
import type { SubagentModel } from '../subagents/subagent-runner';

/**
 * What a chat turn is given and gives back, free of `vscode`: the chat it writes to, the request as
 * plain values, the result, and the ports to the model and the workspace. `src/vscode/` implements
 * them over VS Code; the tests over fakes.
 */

/** A button in the chat that runs a command. */
export interface ChatButton {
  readonly command: string;
  readonly title: string;
  readonly arguments?: readonly unknown[];
}

/** The chat a turn writes to: VS Code's response stream, or a fake in tests. */
export interface ChatSurface {
  markdown(text: string): void;
  progress(text: string): void;
  button(button: ChatButton): void;
  /** A button that opens `diff` (the change of `path`) in an editor. */
  diffButton(path: string, diff: string, title: string): void;
}

/** A chat request, read into plain values. */
export interface TurnRequest {
  readonly prompt: string;
  /** The slash command (`compact`, `context`, `summary`, `new`), if any. */
  readonly command?: string;
  /** VS Code's history of the chat (`context.history`), read by shape. */
  readonly history: readonly unknown[];
  /** The chat the request came from (VS Code's chat session), when known. */
  readonly chat?: string;
  /** What the user attached (instruction files aside). */
  readonly attachments: readonly AttachedReference[];
  /** The instruction files VS Code attached. */
  readonly instructions: readonly InstructionSource[];
  /** Tools the user named with `#`. */
  readonly toolReferences: readonly string[];
  /** The editor's tools, run on behalf of this request. */
  readonly editorTools?: EditorToolsPort;
}

/** What VS Code is given back: the result's metadata names the conversation and the turn. */
export interface TurnResult {
  readonly metadata: TurnMetadata;
  readonly errorDetails?: { readonly message: string };
}

/** The model in use and what goes with it: the editor's session implements it. */
export interface TurnModels {
  languageModel(): Promise<LanguageModel | undefined>;
  learnWindow(limit: number, why?: string, lowerBound?: boolean): void;
  /** Whether the window in use is only a lower bound, learned from a prompt the server cut. */
  windowIsLowerBound(): boolean;
  /** The whole window of the model in use (input and answer), when known. */
  contextWindow(): number | undefined;
  /** The whole window the model's server states for it (its model list or native API), when it does. */
  statedWindow?(): number | undefined;
  maxOutputTokens(): number | undefined;
  telemetry(): LongrunTelemetry;
  truncationAdvice(): string | undefined;
  observeUsage(usage: ReportedUsage | undefined): void;
  redact(text: string): string;
  /** Whether the model runs on one of Longrun's own endpoints (its usage is the server's own count). */
  servedByEndpoint(): boolean;
  /** What the agent's requests begin with (system prompt and tools), for a summary request that continues them. */
  setAgentPrefix(prefix: AgentPrefix): void;
  modelName(): string | undefined;
  newId(): string;
  /** The wire format of the model in use's endpoint; undefined for VS Code's models, which take no cache hints. */
  providerKind(): ProviderKind | undefined;
  /** What a conversation used and cost, and the state of its provider's cache (the gauge, `/context`). */
  usageView(conversation: Conversation): UsageView;
  /** The model subagents run on: `longrun.subagent.model`, else the conversation's; undefined when there is none. */
  subagentModel(): Promise<SubagentModel | undefined>;
}

/** The workspace as a turn sees it. */
export interface TurnWorkspace {
  /** The agent's files, and how a file Longrun changed is read whole, to compare it with what was written. */
  readonly files: WorkspacePort & Pick<RevertFiles, 'textForRevert'>;
  /** The terminal of `run_command`; offered only in a trusted workspace. */
  readonly commands?: CommandPort;
  /** The same terminal running only what the user's allow list lets run unasked, for subagents (never a question). */
  readonly allowedCommands?: CommandPort;
  trusted(): boolean;
  roots(): readonly WorkspaceRoot[];
}

/** Shows a compaction's summary before it is applied, in an editor (see `summary-documents.ts`). */
export interface SummaryPreviews {
  preview(conversation: Conversation, entry: CompactionEntry, signal: AbortSignal): Promise<string | undefined>;
  accept(conversationId: string, entryId: string): Promise<boolean>;
  discard(conversationId: string, entryId: string): Promise<boolean>;
  ended(conversationId: string, entryId: string): void;
}
