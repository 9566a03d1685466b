import type { ToolSet } from 'ai';
import { NOTHING_ARCHIVED } from '../../core/recall';
import { OWN_TOOL_NAMES } from '../../core/tool-names';
import { toolDefinitionsText } from '../../llm/agent';
import { createAgentTools, SubagentFailure, type AgentFileEvent, type DelegatePort, type PlanPort, type RecallPort } from '../../llm/agent-tools';
import { createEditorTools, selectEditorTools, type EditorToolSelection } from '../../llm/editor-tools';
import type { CommandRun } from '../../llm/workspace-port';
import type { Conversation } from '../conversation/conversation';
import { NO_PLAN } from '../plan/plan-keeper';
import type { LongrunSettings } from '../settings';
import type { SkillCatalog } from '../skills/skill-catalog';
import { SkillLoader } from '../skills/skill-loader';
import { resolveAttachments, type Attachment } from './attachments';
import type { TurnRequest, TurnWorkspace } from './chat-surface';
import type { Instruction } from './instructions';
import { systemPrompt } from './system-prompt';

/** The smallest window (whole, in tokens) the `plan` tool is offered in. */
export const PLAN_WINDOW = 8_192;
/** The smallest window (whole, in tokens) the `delegate` tool is offered in. */
export const DELEGATE_WINDOW = 16_384;
/**
 * Below this window (whole, in tokens), requests carry the compact system prompt and the tools'
 * short descriptions: with the full ones, the system prompt and the tools of a 4,096-token window
 * take more than half of what it leaves for the conversation, and every turn ends in a compaction;
 * at 8,192, counted by a tokenizer that counts a quarter more, they and a summary pass the
 * compaction's target.
 */
export const COMPACT_REQUEST_WINDOW = 16_384;
/** Longest tool result the model gets, Longrun's tools' and the editor's alike; also the cap of one attachment. */
export const MAX_RESULT_CHARS = 20_000;
/** Most text all attachments of one request carry together. */
const MAX_ATTACHMENT_CHARS = 3 * MAX_RESULT_CHARS;

/** What a request's own tools report to the turn: files the agent touched, commands it ran, and its plan. */
export interface RequestHooks {
  readonly onFileEvent?: (event: AgentFileEvent) => void;
  readonly onCommandRun?: (run: CommandRun) => Promise<void>;
  readonly plan?: PlanPort;
  readonly delegate?: DelegatePort;
}

export interface RequestSetupDeps {
  readonly workspace: TurnWorkspace;
  readonly settings: () => LongrunSettings;
  /** The skills the agent may load; none without it. */
  readonly skills?: SkillCatalog;
}

/** The system prompt and tools of a request, and the editor tools it named or the settings name. */
export interface RequestParts {
  readonly system: string;
  readonly tools: ToolSet;
  readonly editorTools: EditorToolSelection;
}

/**
 * What a request carries besides the conversation: the system prompt and the tools, as the workspace
 * (trust, folders, skills), the settings and the window of the model in use make them, and the
 * files the user attached. Between requests, what the last one carried is what the gauge counts.
 */
export class RequestSetup {
  /** The instructions the last request carried: counted in the gauge until the next request. */
  private instructions: readonly Instruction[] = [];
  /** What the last request carried, as text, the window it was made for, and whether a turn sent it. */
  private latest: { readonly window: number | undefined; readonly text: string; readonly turn: boolean } | undefined;

  constructor(private readonly deps: RequestSetupDeps) {}

  /**
   * The system prompt and the tools of a request for a model of `window` tokens (undefined:
   * unknown): Longrun's own tools, and the editor's tools that `longrun.agent.editorTools` or the
   * request (`#name`) names. An untrusted workspace gets no editor tools. A request of a turn
   * (`conversation` given) is remembered as what requests carry until the next.
   */
  build(
    window: number | undefined,
    request?: Pick<TurnRequest, 'toolReferences' | 'editorTools'>,
    conversation?: Conversation,
    hooks: RequestHooks = {},
    instructions: readonly Instruction[] = this.instructions,
  ): RequestParts {
    const { workspace } = this.deps;
    const trusted = workspace.trusted();
    const room = window ?? Infinity;
    const plan = room >= PLAN_WINDOW;
    const compact = room < COMPACT_REQUEST_WINDOW;
    const own = createAgentTools(workspace.files, {
      readOnly: !trusted,
      ...(compact ? { brief: true } : {}),
      ...(trusted && workspace.commands ? { commands: workspace.commands } : {}),
      maxResultChars: MAX_RESULT_CHARS,
      ...(hooks.onFileEvent ? { onFileEvent: hooks.onFileEvent } : {}),
      ...(hooks.onCommandRun ? { onCommandRun: hooks.onCommandRun } : {}),
      // Offered in every request, so that the tool definitions (and their count) do not change when
      // a compaction comes; the system prompt points at it once there is something to recall.
      recall: conversation ?? NO_ARCHIVE,
      // Offered when there are skills to load: it comes and goes with the system prompt's list of them.
      ...(this.deps.skills?.skills().length ? { skills: new SkillLoader(this.deps.skills, conversation) } : {}),
      // Offered in every request of a window they fit in (an untrusted workspace included: the plan
      // changes no file, subagents only read). Their definitions take about 480 and 390 tokens: a
      // small local model's window keeps that room for the conversation, the plan's first since it is
      // what a turn goes on from after a summary.
      ...(plan ? { plan: hooks.plan ?? NO_PLAN } : {}),
      ...(room >= DELEGATE_WINDOW ? { delegate: hooks.delegate ?? NO_SUBAGENTS } : {}),
    });
    const port = request?.editorTools;
    const editorTools =
      trusted && port
        ? selectEditorTools(port.list(), {
            setting: this.deps.settings().agent.editorTools,
            requested: [...(request?.toolReferences ?? [])],
            reserved: OWN_TOOL_NAMES,
          })
        : { offered: [], skipped: [] };
    const tools = { ...own, ...(port ? createEditorTools(port, editorTools.offered, { maxResultChars: MAX_RESULT_CHARS }) : {}) };
    const system = this.systemPromptNow(instructions, plan, compact);
    if (conversation) {
      this.instructions = instructions;
      this.latest = { window, text: overheadOf(system, tools), turn: true };
    }
    return { system, tools, editorTools };
  }

  /**
   * What every request carries besides the messages, as text, for the token count: what the last
   * request of a turn carried (a window learned in the middle of a turn changes nothing its requests
   * carry), or, before any, or after the settings of the editor's tools changed, what a request for a
   * model of `window` tokens would carry now. The same string until it changes.
   */
  overheadText(window: number | undefined): string {
    const latest = this.latest;
    if (latest && (latest.turn || latest.window === window)) return latest.text;
    const { system, tools } = this.build(window);
    // Same text as each request sets, so the gauge reads the same before and after a reload.
    const text = overheadOf(system, tools);
    this.latest = { window, text, turn: false };
    return text;
  }

  /** The editor's tools offered changed (`longrun.agent.editorTools`): the next count makes the request again. */
  toolsChanged(): void {
    this.latest = undefined;
  }

  /** The names of Longrun's own tools, all of them whatever the workspace's trust. */
  ownToolNames(): ReadonlySet<string> {
    return OWN_TOOL_NAMES;
  }

  /** What the user attached to the request, read and capped like a tool result. */
  attachmentsOf(request: TurnRequest, signal: AbortSignal): Promise<Attachment[]> {
    if (request.attachments.length === 0) return Promise.resolve([]);
    return resolveAttachments(request.attachments, {
      roots: this.deps.workspace.roots(),
      files: this.deps.workspace.files,
      maxChars: MAX_RESULT_CHARS,
      maxTotalChars: MAX_ATTACHMENT_CHARS,
      signal,
    });
  }

  private systemPromptNow(instructions: readonly Instruction[], plan: boolean, compact: boolean): string {
    const { workspace } = this.deps;
    return systemPrompt({
      trusted: workspace.trusted(),
      folders: workspace.roots().map((r) => r.name),
      instructions,
      skills: this.deps.skills?.skills() ?? [],
      plan,
      compact,
    });
  }
}

/** What a request carries besides the messages, as one text. */
function overheadOf(system: string, tools: ToolSet): string {
  return `${system}\n${toolDefinitionsText(tools)}`;
}

/** What `recall` answers in a request made outside any conversation (the count of the tools' definitions). */
const NO_ARCHIVE: RecallPort = { recall: () => NOTHING_ARCHIVED };

/** What `delegate` does outside any conversation (the count of the tools' definitions): no subagent runs there. */
const NO_SUBAGENTS: DelegatePort = {
  delegate: () => Promise.reject(new SubagentFailure('Subagent failed: no conversation is open, so no subagent can run. Done so far: nothing.')),
};
