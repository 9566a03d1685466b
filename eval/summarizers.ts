/**
 * The summarizers the eval runs the engine with: two scripted ones, so that the numbers do not
 * depend on a model (one drops every needle on purpose, one keeps what a careful model would keep),
 * and, when `OPENAI_BASE_URL` is set, a real model through Longrun's own summarizer.
 */
import { createAiSummarizer } from '../src/llm/ai-summarizer';
import { createEndpointModel, listEndpointModels } from '../src/llm/openai-endpoint';
import type { Summarizer, SummaryRequest, SummaryResponse } from '../src/core/ports';

/** The round the directive asks for, so a scripted summary carries the heading a model would write. */
function roundOf(request: SummaryRequest): string {
  const directive = request.messages.at(-1)?.content ?? '';
  return /Compaction Round (\d+)/.exec(directive)?.[1] ?? '1';
}

/** The modules the conversation's answers say were fixed: the only specifics the dropping summary keeps. */
function modulesFixed(request: SummaryRequest): string[] {
  const modules = new Set<string>();
  for (const message of request.messages) for (const match of message.content.matchAll(/Module (\d+) is fixed/g)) modules.add(match[1]!);
  return [...modules].sort((a, b) => Number(a) - Number(b));
}

/**
 * A summarizer that drops every needle: it writes a summary of the right shape and a plausible
 * length about the routine work (which modules were fixed) and nothing the user or the tools said.
 * What survives its summaries is what the engine keeps outside the model.
 */
export function droppingSummarizer(): Summarizer {
  return {
    name: 'scripted:drops-needles',
    async summarize(request) {
      const modules = modulesFixed(request);
      const text = [
        `## Session Summary (Compaction Round ${roundOf(request)})`,
        '### Completed Work',
        `- Fixed the failing tests of ${modules.length > 0 ? `modules ${modules.join(', ')}` : 'the modules worked on'}: each handler now checks its input before it retries.`,
        '- Added a test for each failing case.',
        '### Key Technical Decisions',
        '- Handlers validate their input before retrying.',
        '### Current State',
        '- Working on: the next module whose tests fail.',
        '- Last completed: the module fixed most recently, with its test.',
        '### Pending Work',
        '- [ ] The modules that still fail their tests.',
        '### Errors & Resolutions',
        '- Failing tests in several modules → input checks added before the retries.',
        '### User Preferences and Constraints',
        '- None noted.',
        '### Next Steps',
        '1. Read the next failing module and fix it.',
        '2. Run its tests.',
      ].join('\n');
      return { text, model: 'scripted-dropping' };
    },
  };
}

/** Sentences a careful summarizer keeps word for word, by what they say. */
const KEEP_PATTERNS: ReadonlyArray<readonly [section: string, pattern: RegExp]> = [
  ['User Preferences and Constraints', /\b(?:must|never|don't|do not|always|prefer)\b/i],
  ['Errors & Resolutions', /\b(?:\w*Error\b|Exception\b|undefined:)/],
  ['Key Technical Decisions', /\b(?:decided|chose|we will|because|instead of)\b/i],
  ['Pending Work', /\b(?:later|after that|don't forget|todo)\b/i],
  ['Completed Work', /[\w.-]+\/[\w./-]+\.\w+/],
];

/**
 * A summarizer that keeps needles: from the conversation and the previous summary it copies every
 * sentence that states a rule, an error, a decision, a deferred task or a file path, into the section
 * it belongs to, within its output room. The words of tool results count only for errors: a careful
 * model does not take a file's text for the user's instructions.
 */
export function keepingSummarizer(): Summarizer {
  return {
    name: 'scripted:keeps-needles',
    async summarize(request) {
      const kept = new Map<string, string[]>(KEEP_PATTERNS.map(([section]) => [section, []]));
      const seen = new Set<string>();
      for (const message of request.messages.slice(0, -1)) {
        const fromTool = /^\[#\d+ tool\]/.test(message.content);
        for (const sentence of message.content.split(/\n|(?<=[.!?])\s+/)) {
          const clean = sentence
            .replace(/^\[#\d+ \w+\]\s*/, '')
            .replace(/^(?:[-*]|\d+[.)])\s+/, '')
            .trim();
          if (clean.length < 8 || clean.startsWith('<') || clean.startsWith('[tool') || seen.has(clean)) continue;
          for (const [section, pattern] of KEEP_PATTERNS) {
            if (fromTool && section !== 'Errors & Resolutions') continue;
            if (!pattern.test(clean)) continue;
            seen.add(clean);
            kept.get(section)!.push(`- ${clean}`);
            break;
          }
        }
      }
      const lines = [`## Session Summary (Compaction Round ${roundOf(request)})`];
      let room = request.maxOutputTokens * 3;
      for (const [section, items] of kept) {
        lines.push(`### ${section}`);
        for (const item of items.length > 0 ? items : ['- None.']) {
          if (item.length > room) break;
          room -= item.length + 1;
          lines.push(item);
        }
      }
      lines.push(
        '### Current State',
        '- Working on: the next failing module.',
        '### Next Steps',
        '1. Continue with the next module and run its tests.',
      );
      return { text: lines.join('\n'), model: 'scripted-keeping' };
    },
  };
}

/**
 * Longrun's AI SDK summarizer on the OpenAI-compatible endpoint at `OPENAI_BASE_URL`, with
 * `OPENAI_API_KEY` when set, and `OPENAI_MODEL` or else the first model the endpoint lists.
 * Undefined without `OPENAI_BASE_URL`.
 */
export async function endpointSummarizer(env: NodeJS.ProcessEnv): Promise<Summarizer | undefined> {
  const baseUrl = env.OPENAI_BASE_URL?.trim();
  if (!baseUrl) return undefined;
  const apiKey = env.OPENAI_API_KEY?.trim() || undefined;
  const id = env.OPENAI_MODEL?.trim() || (await listEndpointModels(baseUrl, apiKey))[0];
  if (!id) throw new Error(`The endpoint at ${baseUrl} lists no model; set OPENAI_MODEL.`);
  const model = createEndpointModel({ endpoint: 'eval', baseUrl, id }, apiKey);
  return createAiSummarizer({ model, name: `eval:${id}` });
}

/** Tokens a summarizer was sent and wrote, counted as the engine counts text when it does not say. */
export interface SpendCount {
  inputTokens: number;
  outputTokens: number;
  calls: number;
}

/** Wraps a summarizer so that every call adds what it cost to `spend`. */
export function metered(summarizer: Summarizer, spend: SpendCount, countText: (value: string) => number): Summarizer {
  return {
    name: summarizer.name,
    ...(summarizer.contextWindow !== undefined ? { contextWindow: summarizer.contextWindow } : {}),
    async summarize(request: SummaryRequest, signal?: AbortSignal): Promise<SummaryResponse> {
      const response = await summarizer.summarize(request, signal);
      spend.calls++;
      if (response.usage) {
        spend.inputTokens += response.usage.inputTokens;
        spend.outputTokens += response.usage.outputTokens;
      } else {
        spend.inputTokens += countText(request.system) + request.messages.reduce((sum, m) => sum + countText(m.content) + 4, 4);
        spend.outputTokens += countText(response.text);
      }
      return response;
    },
  };
}
