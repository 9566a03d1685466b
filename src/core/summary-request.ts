import type { ImportanceConfig, SummaryConfig, TruncationConfig } from './config';
import type { EngineMemo } from './engine-memo';
import { isSummaryMessage, SUMMARY_PREFIX } from './history';
import { selectToKeep } from './importance';
import type { MessageTokenCounter } from './message-tokens';
import { stringifyOutput, type Message } from './messages';
import type { SummaryRequest, SummaryRequestMessage } from './ports';
import { estimateTokens } from './tokenizer';

/**
 * The summary request, built as structured messages rather than one interpolated string, so roles survive:
 * system = the user's prompt as written or the default; the previous summary as a system-role
 * message (absent when there is none); the conversation with its original roles, tool traffic
 * rendered readably and huge outputs cut; and a final user directive.
 */

/** The default summarizer prompt. Generic on purpose: no persona is injected, whatever the model. */
export const DEFAULT_SYSTEM_PROMPT = [
  "You summarize a coding agent's conversation so that the agent can continue the work from the summary alone.",
  'The summary replaces the messages it covers: anything it leaves out is lost to the agent.',
  'Be exact about file paths, commands, error messages, names and numbers. Be dense: bullet points and tables, no filler.',
].join('\n');

/** The sections every summary has, in order. */
export const SUMMARY_SECTIONS = [
  'Original Task',
  'Completed Work',
  'Key Technical Decisions',
  'Current State',
  'Pending Work',
  'Errors & Resolutions',
  'User Preferences and Constraints',
  'Next Steps',
] as const;

/**
 * The sections of the short template, asked for in a small window (see `SHORT_TEMPLATE_ROOM`): the
 * eight headings alone would take a good share of a summary of a few hundred tokens.
 */
export const SHORT_SUMMARY_SECTIONS = ['Original Task', 'Completed Work', 'Current State', 'Next Steps'] as const;

/** Below this room for the conversation's messages (in tokens), a summary is asked for in the short template. */
export const SHORT_TEMPLATE_ROOM = 6_000;

/** The progress section (Done / In Progress / Blocked), when `summary.progressSection` is on. */
export const PROGRESS_SECTIONS = ['Progress'] as const;

/** The preferences, facts and earlier-discussion sections, when `summary.factsSections` is on. */
export const FACTS_SECTIONS = ['Preferences', 'Facts', 'Previous Discussion'] as const;

export type SummarySection = (typeof SUMMARY_SECTIONS)[number] | (typeof PROGRESS_SECTIONS)[number] | (typeof FACTS_SECTIONS)[number];

/**
 * The sections of the summary template, in order: the standard ones, with Progress after Current
 * State and Preferences, Facts and Previous Discussion before Next Steps when they are on; or, `short`,
 * the four of the short template alone.
 */
export function summarySections(summary: SummaryConfig, short = false): readonly SummarySection[] {
  if (short) return SHORT_SUMMARY_SECTIONS;
  const sections: SummarySection[] = [];
  for (const section of SUMMARY_SECTIONS) {
    if (section === 'Next Steps' && summary.factsSections) sections.push(...FACTS_SECTIONS);
    sections.push(section);
    if (section === 'Current State' && summary.progressSection) sections.push(...PROGRESS_SECTIONS);
  }
  return sections;
}

export interface DirectiveOptions {
  readonly round: number;
  readonly summary: SummaryConfig;
  /** The first request of the conversation, to be copied verbatim. */
  readonly originalTask?: string;
  /** Extra instructions from the user (`/compact focus on the parser`). */
  readonly focus?: string;
  /** Set when this request covers one batch of several. */
  readonly batch?: { readonly index: number; readonly count: number };
  /** True when the latest user request is kept verbatim after the summary. */
  readonly splitTurn?: boolean;
  /** Positions ([#n]) of the messages to carry into the summary word for word: the keep list. */
  readonly keep?: readonly number[];
  /** The directive ends a continuation of the conversation, which offers the agent's tools. */
  readonly continuation?: boolean;
  /** The short template (a small window, see `SHORT_TEMPLATE_ROOM`). */
  readonly short?: boolean;
}

/** The headings a summary in the template has, one a line: what a summary's budget must hold before anything else. */
export function templateHeadings(summary: SummaryConfig, short: boolean, round = 1): string {
  return [summaryHeading(round), ...summarySections(summary, short).map((section) => `### ${section}`)].join('\n');
}

export function summaryHeading(round: number): string {
  return `## Session Summary (Compaction Round ${round})`;
}

/** The final user message: what to preserve, condense, prioritize and remove, and the sections. */
export function buildDirective(options: DirectiveOptions): string {
  const { summary } = options;
  const lines: string[] = [];
  if (options.batch) {
    lines.push(
      `Summarize the messages above: part ${options.batch.index} of ${options.batch.count} of an older stretch of the conversation.`,
      'Other parts are summarized separately and merged later, so record facts with their message numbers ([#n]) and do not guess about what is not shown.',
    );
  } else {
    lines.push('Summarize the conversation above so the work can continue from your summary alone.');
  }
  // The tools stay offered so that the request begins as the agent's do; some servers let a model
  // call them whatever `tool_choice` says.
  if (options.continuation) lines.push('Answer with the summary itself, as text: do not call any tool.');
  lines.push('');
  lines.push(
    "PRESERVE: the user's requests and constraints word for word; exact file paths, symbols, commands, error messages and numbers; decisions and their reasons; what is done and what is not.",
  );
  lines.push('CONDENSE: tool output and exploration into their findings; repeated attempts into what was tried and the outcome.');
  lines.push('PRIORITIZE: the current state and the next steps; anything the user said must or must not be done.');
  lines.push('REMOVE: pleasantries, restated context, full file contents already saved to disk, superseded plans.');
  if (summary.preserveCodeBlocks) lines.push('Keep code blocks that matter for the next steps exactly as written.');
  else lines.push('Leave out code blocks unless absolutely critical.');
  if (summary.preserveFilePaths) lines.push('Name every file by its full workspace path.');
  lines.push(depthInstruction(summary.depth));
  lines.push(`Keep the summary under about ${summary.targetTokens} tokens.`);
  if (options.keep && options.keep.length > 0) {
    lines.push(
      `KEEP VERBATIM: ${options.keep.map((n) => `[#${n}]`).join(', ')}. These messages matter most (code, file paths, decisions, tool calls): carry what they say into the sections they belong to word for word, not paraphrased.`,
    );
  }
  if (options.focus?.trim()) {
    lines.push('', `The user asks this summary to focus on: ${options.focus.trim()}`);
  }
  lines.push('', 'If a previous summary is given above, integrate it: carry its facts forward, updated, without repeating it.');
  if (options.splitTurn) {
    lines.push('The latest user request is kept verbatim after your summary; summarize the work already done on it under Current State.');
  }
  lines.push('', 'Write exactly these sections, in this order, in Markdown:', '', summaryHeading(options.round));
  for (const section of summarySections(summary, options.short)) lines.push(`### ${section}`, sectionHint(section, options.short));
  if (options.originalTask) {
    lines.push('', 'The Original Task, to be copied verbatim into its section:', '<original-task>', options.originalTask, '</original-task>');
  }
  return lines.join('\n');
}

function depthInstruction(depth: SummaryConfig['depth']): string {
  switch (depth) {
    case 'brief':
      return 'Depth: brief. Key decisions and outcomes only; one line per item.';
    case 'standard':
      return 'Depth: standard. Balance completeness and length.';
    case 'detailed':
      return 'Depth: detailed. Preserve all significant details, including intermediate findings.';
  }
}

function sectionHint(section: SummarySection, short = false): string {
  switch (section) {
    case 'Original Task':
      return "The user's original request, verbatim.";
    case 'Completed Work':
      if (short) return '- What was done, file by file, with the decisions taken and the errors fixed.';
      return '| File/Component | Action | Description |\n|---|---|---|\n(one row per file or component touched)';
    case 'Key Technical Decisions':
      return '- Choices that affect future work (dependencies, patterns, formats) and why.';
    case 'Current State':
      return '- Working on: …\n- Last completed: …';
    case 'Pending Work':
      return '- [ ] Remaining items as a checklist.';
    case 'Errors & Resolutions':
      return '- error → resolution (write "None" when there were none).';
    case 'User Preferences and Constraints':
      return '- Everything the user asked to do, avoid or keep, in their words.';
    case 'Next Steps':
      return '1. The very next actions, in order.';
    case 'Progress':
      return '- Done: …\n- In Progress: …\n- Blocked: … (and on what)';
    case 'Preferences':
      return '- How the user likes the work done (style, tools, wording), beyond the constraints above.';
    case 'Facts':
      return '- Facts established about the project and its environment: names, versions, numbers, locations.';
    case 'Previous Discussion':
      return 'What was discussed, oldest first, in a few sentences.';
  }
}

/**
 * Renders one conversation message for the summarizer, keeping its role and numbering it. `memo`
 * remembers what the rendering was made from, so that `countRequest` counts it as its message.
 */
export function renderMessage(message: Message, position: number, truncation: TruncationConfig, memo: EngineMemo): SummaryRequestMessage {
  const pieces: string[] = [];
  for (const part of message.content) {
    switch (part.type) {
      case 'text':
        pieces.push(part.text);
        break;
      case 'reasoning':
        // Reasoning given only in encrypted or redacted form has no text to render.
        if (part.text.length > 0) pieces.push(`(reasoning) ${part.text}`);
        break;
      case 'tool-call':
        pieces.push(
          `[tool call ${part.toolName}#${part.toolCallId}] ${cut(stringifyOutput(part.input), truncation.resultChars, truncation.hugeResultChars)}`,
        );
        break;
      case 'tool-result':
        pieces.push(
          `[tool result ${part.toolName}#${part.toolCallId}${part.isError ? ' (error)' : ''}]\n` +
            cut(stringifyOutput(part.output), truncation.resultChars, truncation.hugeResultChars),
        );
        break;
      case 'file':
        pieces.push(`[attachment ${part.name ?? 'unnamed'} (${part.mediaType}${part.size !== undefined ? `, ${part.size} bytes` : ''})]`);
        break;
    }
  }
  let content = pieces.join('\n');
  if (message.role !== 'tool') content = cut(content, truncation.messageChars, Number.POSITIVE_INFINITY);
  // Tool results become user turns: the summarizer is not given tool definitions, and most
  // providers reject tool messages without them.
  const role = message.role === 'tool' ? 'user' : message.role;
  const header = headerOf(message, position);
  const rendered: SummaryRequestMessage = { role, content: `${header} ${content}` };
  memo.renderings.set(rendered, { message, truncation, header });
  return rendered;
}

/** The start of a rendered message: its number and original role. */
function headerOf(message: Message, position: number): string {
  return `[#${position} ${message.role}]`;
}

/**
 * Encodings whose tokenizer cuts text into pieces by a pattern before encoding each piece, and whose
 * pattern always ends a piece at a "]" followed by a space. A rendered message's header and the rest
 * of its line then count apart exactly as they count together, so the rest is counted once per
 * message and limits, whatever number the message has in this request. (The chars/4 estimate rounds
 * each count up, so it counts the whole line, which costs it nothing.)
 */
const COUNTS_APART: ReadonlySet<string> = new Set(['o200k_base', 'cl100k_base']);

/** The cache key of a set of limits; most messages share one limits object, so it is made once. */
function limitsKey(truncation: TruncationConfig, memo: EngineMemo): string {
  let key = memo.limitsKeys.get(truncation);
  if (key === undefined) {
    key = `${truncation.resultChars}/${truncation.hugeResultChars}/${truncation.messageChars}`;
    memo.limitsKeys.set(truncation, key);
  }
  return key;
}

/**
 * The tokens of `renderMessage(message, position, truncation).content`, as `counter` counts text;
 * a message counted before with the same limits is neither rendered nor tokenized again.
 */
export function renderedMessageTokens(
  message: Message,
  position: number,
  truncation: TruncationConfig,
  counter: MessageTokenCounter,
  memo: EngineMemo,
): number {
  if (!COUNTS_APART.has(counter.tokenizer.name)) return counter.countText(renderMessage(message, position, truncation, memo).content);
  const header = headerOf(message, position);
  const rest = (): string => renderMessage(message, position, truncation, memo).content.slice(header.length);
  return counter.countRemembered(header) + counter.countDerived(message, limitsKey(truncation, memo), rest);
}

/**
 * Shortens text over `limit` characters. Over `huge`, the cut keeps head and tail and says how
 * much was cut, so a single huge tool result keeps its start and its end; otherwise the tail is dropped with a marker.
 */
export function cut(value: string, limit: number, huge: number): string {
  if (value.length <= limit) return value;
  if (value.length > huge) {
    const head = Math.floor(limit * 0.75);
    const tail = limit - head;
    return `${value.slice(0, head)}\n[… ${value.length - head - tail} of ${value.length} characters cut …]\n${value.slice(value.length - tail)}`;
  }
  return `${value.slice(0, limit)}\n[… truncated: ${value.length - limit} more characters]`;
}

export interface RequestParts {
  readonly summary: SummaryConfig;
  readonly truncation: TruncationConfig;
  /** Messages with their positions in the model's view, in the order they should appear. */
  readonly messages: readonly {
    readonly message: Message;
    readonly position: number;
    /** Tighter limits for this message (low-importance messages at brief depth). */
    readonly truncation?: TruncationConfig;
  }[];
  readonly previousSummary?: Message;
  readonly directive: DirectiveOptions;
  readonly purpose: SummaryRequest['purpose'];
  /**
   * The importance weights and keep options. With them, the messages above the keep threshold
   * (within its budget) are named in the directive's keep list, and a whole summary sends them
   * uncut; without them there is no keep list.
   */
  readonly importance?: ImportanceConfig;
  /** Messages in the model's view, for the recency of each position; the highest position + 1 when absent. */
  readonly total?: number;
  /** Where the renderings and the scores are remembered. */
  readonly memo: EngineMemo;
}

/** Limits that cut nothing: how a message on the keep list is rendered in a whole summary's request. */
export const UNCUT: TruncationConfig = {
  resultChars: Number.POSITIVE_INFINITY,
  hugeResultChars: Number.POSITIVE_INFINITY,
  messageChars: Number.POSITIVE_INFINITY,
};

export function systemPrompt(summary: SummaryConfig): string {
  return summary.customPrompt.trim() ? summary.customPrompt : DEFAULT_SYSTEM_PROMPT;
}

/** Output room for a summary: the target plus a quarter (1,000 tokens for an 800-token target). */
export function maxOutputTokens(summary: SummaryConfig): number {
  return Math.ceil(summary.targetTokens * 1.25);
}

/**
 * The text of a summary message, without the skills it carries (its later parts): they are put back
 * word for word after every summary, so the summarizer need not repeat them.
 */
export function previousSummaryText(previous: Message): string {
  const first = previous.content[0];
  const body = first?.type === 'text' ? first.text : '';
  return body.startsWith(SUMMARY_PREFIX) ? body.slice(SUMMARY_PREFIX.length).trimStart() : body;
}

export function buildSummaryRequest(parts: RequestParts): SummaryRequest {
  const messages: SummaryRequestMessage[] = [];
  if (parts.previousSummary && isSummaryMessage(parts.previousSummary)) {
    messages.push({ role: 'system', content: `Previous summary of the conversation:\n\n${previousSummaryText(parts.previousSummary)}` });
  }
  const keep = keepList(parts);
  // Only a whole summary sends them uncut: its size is checked as built, while batches are planned
  // from the configured limits and must not grow past what was measured.
  const uncut = parts.purpose === 'summary' ? new Set(keep) : new Set<number>();
  for (const item of parts.messages) {
    const truncation = uncut.has(item.position) ? UNCUT : (item.truncation ?? parts.truncation);
    messages.push(renderMessage(item.message, item.position, truncation, parts.memo));
  }
  messages.push({ role: 'user', content: buildDirective(keep.length > 0 ? { ...parts.directive, keep } : parts.directive) });
  return {
    system: systemPrompt(parts.summary),
    messages,
    maxOutputTokens: maxOutputTokens(parts.summary),
    temperature: parts.summary.temperature,
    purpose: parts.purpose,
  };
}

/** The positions of the messages on the keep list, in order (see `selectToKeep`). */
function keepList(parts: RequestParts): number[] {
  if (!parts.importance || parts.messages.length === 0) return [];
  const total = parts.total ?? Math.max(...parts.messages.map((item) => item.position)) + 1;
  // Measured as they would be sent uncut, by the chars/4 estimate: the budget is a bound on what the
  // summary is asked to copy, not an exact count.
  const measure = (message: Message, position: number): number => estimateTokens(renderMessage(message, position, UNCUT, parts.memo).content);
  return selectToKeep(parts.messages, total, parts.importance, measure, parts.memo);
}

/**
 * The merge of batch summaries, in the same structured form: the
 * previous summary and each batch summary as system-role messages, then the directive.
 */
export function buildMergeRequest(
  summary: SummaryConfig,
  batchSummaries: readonly string[],
  previousSummary: Message | undefined,
  directive: DirectiveOptions,
): SummaryRequest {
  const messages: SummaryRequestMessage[] = [];
  if (previousSummary) {
    messages.push({ role: 'system', content: `Previous summary of the conversation:\n\n${previousSummaryText(previousSummary)}` });
  }
  batchSummaries.forEach((batch, i) => {
    messages.push({ role: 'system', content: `Summary of part ${i + 1} of ${batchSummaries.length} of the newer messages:\n\n${batch}` });
  });
  const merged = `${buildDirective(directive)}\n\nThe parts were cut by importance, not by time: use the message numbers ([#n]) to put events in order. Merge them into one summary.`;
  messages.push({ role: 'user', content: merged });
  return {
    system: systemPrompt(summary),
    messages,
    maxOutputTokens: maxOutputTokens(summary),
    temperature: summary.temperature,
    purpose: 'merge',
  };
}

/** Tokens a request will take in the summarizer's window, output room included. */
export function requestTokens(
  request: SummaryRequest,
  countText: (value: string) => number,
  countMessage: (message: SummaryRequestMessage) => number = (message) => countText(message.content),
): number {
  let total = countText(request.system) + 4 + request.maxOutputTokens;
  for (const message of request.messages) total += countMessage(message) + 4;
  return total;
}

/**
 * The tokens a request will take in the summarizer's window, as `requestTokens` counts them with
 * `counter`, but with each message rendered under `memo` counted once (see `renderedMessageTokens`)
 * and the prompt and directive remembered: checking whether a request fits, and fitting it, tokenize little.
 */
export function countRequest(request: SummaryRequest, counter: MessageTokenCounter, memo: EngineMemo): number {
  const apart = COUNTS_APART.has(counter.tokenizer.name);
  return requestTokens(
    request,
    (value) => counter.countRemembered(value),
    (message) => {
      const from = memo.renderings.get(message);
      if (!from) return counter.countRemembered(message.content);
      if (!apart) return counter.countText(message.content);
      // The content is only cut (which copies it) when its count is not known yet.
      return (
        counter.countRemembered(from.header) +
        counter.countDerived(from.message, limitsKey(from.truncation, memo), () => message.content.slice(from.header.length))
      );
    },
  );
}
