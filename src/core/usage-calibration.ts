import type { ReportedUsage } from './log';
import type { Message } from './messages';

export type { ReportedUsage };
import type { MessageTokenCounter } from './message-tokens';
import type { RatioPrior } from './tokenizer-priors';

/** What a request was built from, recorded when it is sent and stamped on the usage it gets back. */
export interface RequestBasis {
  /** The compaction entry in force (null before any). */
  readonly basis: string | null;
  /** The local count of the request: messages plus system prompt and tools. */
  readonly localTokens: number;
  /** The part of `localTokens` that is the messages' framing. */
  readonly localFraming?: number;
  /** The part of `localTokens` that is the system prompt and the tool definitions. */
  readonly localFixed?: number;
  /** The provider-to-local ratio learned for this model so far, when any. */
  readonly ratio?: number;
  /** What the gauge counted for the request when it was sent (see `countContext`); the local count times `ratio` when absent. */
  readonly expected?: number;
  /** Of `expected`, the tokens added since the report it stands on; absent when it stands on none (a local count). */
  readonly sinceReport?: number;
}

/** What a usage record of an older format (a round number, no basis) is given: it never applies. */
export const LEGACY_BASIS = '(legacy usage record)';

/** The basis of a summarizer call's usage record: its prompt is not the view, so it never applies. */
export const SUMMARY_BASIS = '(summary request)';

export interface ContextCount {
  /** The best count of the view: calibrated when possible, else local (scaled by the learned ratio). */
  readonly tokens: number;
  /** The local tokenizer's count of the whole view, always computed. */
  readonly localTokens: number;
  readonly source: 'provider+local' | 'local';
  /** Local count of the messages added since the provider's report (0 without a report). */
  readonly sinceReport: number;
}

/** The ratio is kept within these bounds: past them it says more about a broken report than a tokenizer. */
const MIN_RATIO = 0.5;
const MAX_RATIO = 2;

/**
 * Current tokens = last reported (input + output) + the local count of what was added since.
 * The provider's count includes the system prompt and tool definitions that the local count of
 * the messages cannot see, so it is preferred whenever it still describes the current view.
 * `ratio` (the provider's count over the local count of whole requests, learned from earlier
 * reports) scales a view counted locally, so that counts made without a fresh report land close to
 * the provider's too; `addedRatio` (what it counts for messages added to a request, see
 * `learnedAddedRatio`) scales what was added since the report.
 */
export function countContext(
  view: readonly Message[],
  counter: MessageTokenCounter,
  usage: ReportedUsage | undefined,
  currentBasis: string | null,
  localOverhead = 0,
  ratio = 1,
  addedRatio = ratio,
): ContextCount {
  const tokensAfter = (messageId: string): number | undefined => {
    const anchor = view.findIndex((m) => m.id === messageId);
    return anchor < 0 ? undefined : counter.countMessages(view.slice(anchor + 1));
  };
  return calibratedCount(counter.countMessages(view), tokensAfter, usage, currentBasis, localOverhead, ratio, addedRatio);
}

/**
 * `countContext` from counts already at hand: the local count of the view's messages, and the local
 * count of what follows a message in the view (undefined when the view does not hold it), so that a
 * conversation keeping running sums need not walk its view.
 */
export function calibratedCount(
  viewTokens: number,
  tokensAfter: (messageId: string) => number | undefined,
  usage: ReportedUsage | undefined,
  currentBasis: string | null,
  localOverhead = 0,
  ratio = 1,
  addedRatio = ratio,
): ContextCount {
  const localTokens = viewTokens + localOverhead;
  const local: ContextCount = { tokens: Math.round(localTokens * ratio), localTokens, source: 'local', sinceReport: 0 };
  if (!usage || usage.truncated || usage.basis !== currentBasis) return local;
  const sinceReport = tokensAfter(usage.anchorMessageId);
  if (sinceReport === undefined) return local;
  return {
    tokens: usage.inputTokens + usage.outputTokens + Math.round(sinceReport * addedRatio),
    localTokens,
    source: 'provider+local',
    sinceReport,
  };
}

/**
 * How the provider's counts compare with the local tokenizer's for one model: the input tokens it
 * reported over the local count of the same requests, over the latest few usable reports; undefined
 * when no report says. Each report weighs as much as its messages (its local count less the system
 * prompt and tools, when it says them), so a first request that is mostly system prompt, which
 * providers count their own way, does not set the ratio alone; `prior` (ratio 1 for
 * `RATIO_PRIOR_TOKENS` when not given) weighs as much as its tokens.
 */
export function learnedRatio(usages: readonly ReportedUsage[], model: string | undefined, prior: RatioPrior = PLAIN_PRIOR): number | undefined {
  const evidence = ratioEvidence(usages, model);
  if (evidence.samples === 0) return undefined;
  const ratio = (evidence.weighted + prior.ratio * prior.tokens) / (evidence.weight + prior.tokens);
  return Math.min(MAX_RATIO, Math.max(MIN_RATIO, ratio));
}

/**
 * What the latest usable reports of `model` say: their count, and their ratios summed weighted by
 * their messages' local tokens (`weight`: how much of the messages they saw, the evidence to remember).
 */
export function ratioEvidence(usages: readonly ReportedUsage[], model: string | undefined): { samples: number; weight: number; weighted: number } {
  let weighted = 0;
  let weight = 0;
  let samples = 0;
  for (let i = usages.length - 1; i >= 0 && samples < RATIO_SAMPLES; i--) {
    const u = usages[i]!;
    if (u.truncated || !u.localTokens || u.localTokens <= 0 || u.inputTokens <= 0) continue;
    if (model !== undefined && u.model !== undefined && u.model !== model) continue;
    const fixed = u.localFixed !== undefined ? Math.min(Math.max(0, u.localFixed), u.localTokens) : 0;
    const w = Math.max(u.localTokens - fixed, MIN_REPORT_WEIGHT);
    weighted += (u.inputTokens / u.localTokens) * w;
    weight += w;
    samples++;
  }
  return { samples, weight, weighted };
}

/**
 * What the provider counts for a local token of the messages added to a request since its last
 * report (a tool's output, the next question), learned from the latest usable reports of `model` and
 * held towards `prior` (ratio 1 for `RATIO_PRIOR_TOKENS` when not given) by its tokens; undefined
 * when no report says. The whole requests' ratio (`learnedRatio`) is not that: it holds the system
 * prompt and tool definitions, which a provider counts its own way. Some add instructions of their
 * own to every request with tools (Anthropic's tool-use prompt, several hundred tokens), others render
 * the definitions shorter than their JSON (OpenAI); and their text is not what tools return.
 *
 * So each report is compared with the one before it of the same system prompt and tools: what the
 * provider counted more (or less) for the messages that changed between them, over their local
 * count, is the ratio of messages whatever it adds to the rest. A report with no such report before
 * it (the first of a conversation) is weighed by what it holds (`firstReportRatio`): what it counted
 * beyond the prior goes to its system prompt and tools as far as they, with the text a provider may
 * add to them, are the more uncertain part, which they are unless its messages are many. When it
 * counted more than the prior gives, its system prompt and tools count as evidence too, as far as the
 * messages compared so far do not yet stand for them, token for token: the excess may be the
 * messages' and a count too low overflows, so the ratio leans high, but by no more than the prior's
 * own uncertainty (`priorSpread`) above what the report says of its messages: whatever the provider
 * adds to the overhead moves it no further. When it counted less, it counts for its messages only.
 */
export function learnedAddedRatio(usages: readonly ReportedUsage[], model: string | undefined, prior: RatioPrior = PLAIN_PRIOR): number | undefined {
  const reports: ReportedUsage[] = [];
  for (let i = usages.length - 1; i >= 0 && reports.length <= ADDED_SAMPLES; i--) {
    if (isUsable(usages[i]!, model)) reports.push(usages[i]!);
  }
  if (reports.length === 0) return undefined;
  let weighted = 0;
  let weight = 0;
  const unpaired: ReportedUsage[] = [];
  for (let i = 0; i < Math.min(reports.length, ADDED_SAMPLES); i++) {
    const step = messagesStep(reports[i]!, reports[i + 1]);
    if (!step) unpaired.push(reports[i]!);
    else {
      weighted += step.ratio * step.tokens;
      weight += step.tokens;
    }
  }
  const compared = weight;
  for (const report of unpaired) {
    const local = report.localTokens!;
    const messages = Math.max(local - (fixedPart(report) ?? 0), MIN_REPORT_WEIGHT);
    const spread = priorSpread(prior);
    const measured = Math.min(prior.ratio + spread, Math.max(prior.ratio - spread, firstReportRatio(report, prior)));
    const whole = report.inputTokens / local;
    // Above the prior, its system prompt and tools stand for the messages not yet compared, leaning
    // high by no more than the prior is uncertain; below it, it counts for its messages only.
    const ratio = whole > prior.ratio ? Math.min(whole, measured + spread) : measured;
    const tokens = whole > prior.ratio ? Math.max(messages, local - compared) : messages;
    weighted += ratio * tokens;
    weight += tokens;
  }
  const ratio = (weighted + prior.ratio * prior.tokens) / (weight + prior.tokens);
  return Math.min(MAX_RATIO, Math.max(MIN_RATIO, ratio));
}

/**
 * What a report with no report of the same system prompt and tools before it says of the messages'
 * ratio. The provider counted `excess` more than the prior gives the whole request; the messages'
 * ratio and the overhead's (the same tokenizer, other text) are uncertain by `priorSpread` each, and
 * the overhead may hold text the provider adds, unseen, of up to `HIDDEN_OVERHEAD_SPREAD` tokens. The
 * excess is shared out by those uncertainties (the messages' share of it is their covariance with
 * the excess over its variance): on a first request that is mostly system prompt and tools, almost
 * all of it goes to the overhead; on one that is mostly messages, to the messages.
 */
export function firstReportRatio(report: ReportedUsage, prior: RatioPrior = PLAIN_PRIOR): number {
  const local = report.localTokens ?? 0;
  if (!(local > 0)) return prior.ratio;
  const fixed = fixedPart(report) ?? 0;
  const spread = priorSpread(prior);
  const excess = report.inputTokens - prior.ratio * local;
  const variance = (spread * local) ** 2 + (spread * fixed) ** 2 + HIDDEN_OVERHEAD_SPREAD ** 2;
  const shift = (excess * spread ** 2 * local) / variance;
  return Math.min(MAX_RATIO, Math.max(MIN_RATIO, prior.ratio + shift));
}

/**
 * How uncertain a prior ratio is: `PRIOR_SPREAD` of it for a figure weighing `RATIO_PRIOR_TOKENS`,
 * more for one that weighs less (a figure measured with a stand-in tokenizer), less for one that
 * weighs more (measured with the family's own).
 */
export function priorSpread(prior: RatioPrior): number {
  return prior.ratio * PRIOR_SPREAD * Math.sqrt(RATIO_PRIOR_TOKENS / Math.max(1, prior.tokens));
}

/** A prior ratio of the usual weight is this far off (one standard deviation, a share of it). */
const PRIOR_SPREAD = 0.04;
/**
 * What a provider may add, unseen, to a request's system prompt and tools (one standard deviation, in
 * tokens): Anthropic's tool-use prompt is a few hundred, a gateway's or a chat template's may be more.
 */
const HIDDEN_OVERHEAD_SPREAD = 3_000;

/**
 * What the provider counted for the messages that changed between `before` and `report`, over their
 * local count; undefined unless both requests carried the same system prompt and tools.
 */
function messagesStep(report: ReportedUsage, before: ReportedUsage | undefined): RatioPrior | undefined {
  const fixed = fixedPart(report);
  if (before === undefined || fixed === undefined || fixedPart(before) !== fixed) return undefined;
  const changed = report.localTokens! - before.localTokens!;
  // Two requests of the same messages say nothing of them.
  if (changed === 0) return { ratio: 0, tokens: 0 };
  const ratio = (report.inputTokens - before.inputTokens) / changed;
  return { ratio: Math.min(MAX_RATIO, Math.max(MIN_RATIO, ratio)), tokens: Math.abs(changed) };
}

/** The system prompt and tools of a report's request, within its count; undefined when it does not say. */
function fixedPart(report: ReportedUsage): number | undefined {
  return report.localFixed === undefined ? undefined : Math.min(Math.max(0, report.localFixed), report.localTokens ?? 0);
}

/** A report that says something of `model`'s counts: not cut, with a local count. */
function isUsable(u: ReportedUsage, model: string | undefined): boolean {
  if (u.truncated || !u.localTokens || u.localTokens <= 0 || u.inputTokens <= 0) return false;
  return model === undefined || u.model === undefined || u.model === model;
}

/** A model's ratio as it is kept across conversations (global state), and read back as their prior. */
export interface CalibrationMemory {
  /** What earlier conversations learned of `model`, else its family's table figure; undefined when nothing is known. */
  prior(model: string | undefined): RatioPrior | undefined;
  /** What a conversation has learned of `model` so far, prior included. */
  learned(model: string, ratio: RatioPrior): void;
}

/** A ratio remembered across conversations weighs at most this many tokens: a new provider setup soon shows. */
export const MAX_REMEMBERED_TOKENS = 20_000;

/**
 * What to remember of `model` after these reports: the ratio `learnedRatio` gives, weighing as much as
 * the evidence behind it (the reports' messages and the prior), up to `MAX_REMEMBERED_TOKENS`.
 * Undefined when no report of the model says anything.
 */
export function rememberedPrior(usages: readonly ReportedUsage[], model: string, prior: RatioPrior = PLAIN_PRIOR): RatioPrior | undefined {
  const ratio = learnedRatio(usages, model, prior);
  if (ratio === undefined) return undefined;
  const { weight } = ratioEvidence(usages, model);
  return { ratio, tokens: Math.min(MAX_REMEMBERED_TOKENS, Math.round(weight + prior.tokens)) };
}

const RATIO_SAMPLES = 5;
/** Requests compared for the ratio of what is added: enough steps of a tool loop to mix their kinds of output. */
const ADDED_SAMPLES = 20;
const RATIO_PRIOR_TOKENS = 1_000;
/** Even a request that is all system prompt says something. */
const MIN_REPORT_WEIGHT = 50;
const PLAIN_PRIOR: RatioPrior = { ratio: 1, tokens: RATIO_PRIOR_TOKENS };

/**
 * How a provider's count relates to the local one, part by part: `content` scales the text (the
 * messages' words, the system prompt, the tools), `framing` scales what the local count adds around
 * each message, call and result. Providers frame messages their own way (OpenAI: 3 tokens a message,
 * Longrun's count: 4, and more around tool calls), so one ratio learned on a view of 300 short
 * messages is a few percent off for the view of 30 a compaction leaves.
 */
export interface Calibration {
  readonly content: number;
  readonly framing: number;
}

/**
 * `learnedRatio`, split into content and framing when the reports say enough: a least-squares fit of
 * the provider's counts over the local content and framing of up to the latest
 * `CALIBRATION_SAMPLES` reports of the model, held towards the plain ratio by a prior. Prunings and
 * compactions change the share of framing in a view, which is what tells the two apart. The fit is
 * taken only when it explains the reports better than the plain ratio does, within bounds; otherwise
 * both parts are the plain ratio. Undefined when no report says.
 */
export function learnedCalibration(usages: readonly ReportedUsage[], model: string | undefined, prior?: RatioPrior): Calibration | undefined {
  const plain = learnedRatio(usages, model, prior);
  if (plain === undefined) return undefined;
  const same: Calibration = { content: plain, framing: plain };
  const samples: Array<{ y: number; c: number; f: number }> = [];
  for (let i = usages.length - 1; i >= 0 && samples.length < CALIBRATION_SAMPLES; i--) {
    const u = usages[i]!;
    if (u.truncated || !u.localTokens || u.localTokens <= 0 || u.inputTokens <= 0 || u.localFraming === undefined) continue;
    if (model !== undefined && u.model !== undefined && u.model !== model) continue;
    if (u.localFraming > u.localTokens) continue;
    samples.push({ y: u.inputTokens, c: u.localTokens - u.localFraming, f: u.localFraming });
  }
  if (samples.length < MIN_CALIBRATION_SAMPLES) return same;
  // The prior: a little content and a little framing, each counted at the plain ratio.
  const fitted = [
    ...samples,
    { y: plain * RATIO_PRIOR_TOKENS, c: RATIO_PRIOR_TOKENS, f: 0 },
    { y: plain * FRAMING_PRIOR_TOKENS, c: 0, f: FRAMING_PRIOR_TOKENS },
  ];
  let cc = 0;
  let cf = 0;
  let ff = 0;
  let cy = 0;
  let fy = 0;
  for (const p of fitted) {
    cc += p.c * p.c;
    cf += p.c * p.f;
    ff += p.f * p.f;
    cy += p.c * p.y;
    fy += p.f * p.y;
  }
  const det = cc * ff - cf * cf;
  if (!(det > 0)) return same;
  const content = (cy * ff - fy * cf) / det;
  const framing = (fy * cc - cy * cf) / det;
  if (!(content >= MIN_RATIO && content <= MAX_RATIO && framing >= 0 && framing <= MAX_FRAMING_RATIO)) return same;
  const error = (k: Calibration): number => samples.reduce((sum, p) => sum + (p.y - k.content * p.c - k.framing * p.f) ** 2, 0);
  const split: Calibration = { content, framing };
  return error(split) < error(same) ? split : same;
}

/** The ratio of a provider's count to a local count of `tokens` of which `framing` is framing. */
export function effectiveRatio(calibration: Calibration, tokens: number, framing: number): number {
  if (tokens <= 0) return calibration.content;
  const f = Math.min(Math.max(0, framing), tokens);
  return (calibration.content * (tokens - f) + calibration.framing * f) / tokens;
}

/** Enough reports to cover a few prunings or compactions, which is what separates framing from content. */
const CALIBRATION_SAMPLES = 40;
const MIN_CALIBRATION_SAMPLES = 3;
const FRAMING_PRIOR_TOKENS = 100;
/** A provider may frame a message with up to three times Longrun's allowance; more says the fit went wrong. */
const MAX_FRAMING_RATIO = 3;

/**
 * A server that reports fewer prompt tokens than this share of what was expected cut the prompt.
 * Calibrated by the same model's last report, only what was added since can differ by tokenizer,
 * so the bar is close; without a report, open models' tokenizers may differ from o200k by 20%.
 */
const TRUNCATION_SHARE_UNCALIBRATED = 0.75;
const TRUNCATION_SHARE_CALIBRATED = 0.94;
/** Differences smaller than this are tokenizer noise, whatever the share. */
const TRUNCATION_MIN_TOKENS_UNCALIBRATED = 256;
const TRUNCATION_MIN_TOKENS_CALIBRATED = 128;
/** What was added since the report an expectation stands on may count this much less than expected: a new kind of text. */
const ADDED_SLACK = 0.2;
/**
 * The system prompt and tools, when no report of them stands behind an expectation, may count this
 * much less than expected: a server's chat template renders tools its own way, and a ratio learned
 * on requests whose overhead held text the server added reads high on a request of more messages.
 */
const OVERHEAD_SLACK = 0.5;

export interface TruncationVerdict {
  /** Tokens the server said it read. */
  readonly reported: number;
  /** Tokens it was expected to read: the gauge's count of the request when it was sent. */
  readonly expected: number;
}

/** What a request was expected to count, as `RequestBasis` says it. */
export type SentRequest = Pick<RequestBasis, 'localTokens' | 'localFixed' | 'ratio' | 'expected' | 'sinceReport'>;

/**
 * Whether a server silently cut a prompt (Ollama drops the start of a prompt longer than its
 * context instead of refusing it): it reports noticeably fewer prompt tokens than were sent. Local
 * tokenizers of open models count more tokens than o200k for the same text, rarely fewer, so a
 * report far below the local count is not a tokenizer difference. What was expected is the gauge's
 * count of the request (its last report plus what was added since, else the local count scaled by
 * the ratio learned); the bar leaves room for what in it no report stands for. With a ratio learned
 * from the same model's earlier reports the bar is tighter. Only for a server that may cut a prompt
 * (`mayCutPrompts`): any other's count only calibrates the estimate. `statedWindow` is the whole
 * window the server states for the model (its model list or native API), when it does.
 */
export function detectTruncation(reportedInput: number, sent: SentRequest, statedWindow?: number): TruncationVerdict | undefined {
  const { localTokens, ratio } = sent;
  if (!(localTokens > 0) || !(reportedInput >= 0)) return undefined;
  const expected = sent.expected ?? Math.round(localTokens * (ratio ?? 1));
  // A server cuts only a prompt longer than its context: one that fits the window the server itself
  // states was read whole, and a low count says the template left something out (tool definitions
  // a model's chat template has no place for), which calibration learns.
  if (statedWindow !== undefined && expected <= statedWindow) return undefined;
  const share = ratio === undefined ? TRUNCATION_SHARE_UNCALIBRATED : TRUNCATION_SHARE_CALIBRATED;
  const minTokens = ratio === undefined ? TRUNCATION_MIN_TOKENS_UNCALIBRATED : TRUNCATION_MIN_TOKENS_CALIBRATED;
  const fixed = Math.min(Math.max(0, sent.localFixed ?? 0), localTokens);
  const slack = sent.sinceReport !== undefined ? ADDED_SLACK * sent.sinceReport : OVERHEAD_SLACK * fixed * (ratio ?? 1);
  if (expected - reportedInput < minTokens + slack) return undefined;
  if (reportedInput >= expected * share - slack) return undefined;
  return { reported: reportedInput, expected };
}
