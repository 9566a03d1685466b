import type { ImportanceConfig } from './config';
import type { ContentScore, EngineMemo } from './engine-memo';
import { messageText, toolCalls, toolResults, type Message, type Role } from './messages';
import { plainText } from './text';

/**
 * A heuristic importance score per message. When the compressible part of a conversation is too
 * large for one summarizer call it is summarized in batches, least important first, so the
 * messages that carry requirements, decisions and failures stay verbatim the longest. The score is
 * a plain sum of independent signals, each weighted by `ImportanceConfig`, so a person can read off
 * why one message outranks another. No model is involved and nothing is random: the same history
 * and configuration always give the same scores.
 */

/**
 * Phrases that mark a message as stating a decision. Matched case-insensitively as whole words
 * (any run of whitespace between words), on the message's text and reasoning. Kept short on
 * purpose: each entry is a common way of settling a choice in a coding conversation, and a longer
 * list mostly adds false positives ("will", "use" alone would match almost everything).
 */
export const DECISION_PHRASES: readonly string[] = [
  'decided',
  'chose',
  'chosen',
  'we will',
  "we'll",
  "let's use",
  "let's go with",
  'going with',
  'instead of',
  'settled on',
  'opted for',
];

/**
 * Scores one message at position `index` of a conversation of `total` messages: the sum of its role
 * weight, a recency term that decays exponentially with age, and bonuses for a question, tool
 * calls, configured keywords, length, a fenced code block, a file path and a stated decision.
 * What depends on the message's content alone is remembered in `memo`.
 */
export function scoreMessage(message: Message, index: number, total: number, config: ImportanceConfig, memo: EngineMemo): number {
  // An index at or past the newest position is treated as the newest, so a caller's off-by-one
  // can never lift a message above the full recency weight.
  const age = Math.max(0, total - 1 - index);
  return roleWeight(message.role, config) + config.recencyWeight * config.recencyDecay ** age + contentScore(message, config, memo);
}

/**
 * The part of a message's score that depends on its content alone (question, tool calls, keywords,
 * length, code block, file path, decision). Messages are never changed once written, so it is
 * remembered per message and configuration: a compaction scores the same thousands of messages a
 * previous one did, and a conversation's history only grows.
 */
function contentScore(message: Message, config: ImportanceConfig, memo: EngineMemo): number {
  const entry = remembered(message, config, memo);
  return (entry.score ??= computeContentScore(message, config, memo));
}

/** A content score no lower than {@link contentScore}'s, from cheap checks; remembered like it. */
function contentBound(message: Message, config: ImportanceConfig, memo: EngineMemo): number {
  const entry = remembered(message, config, memo);
  return entry.score ?? (entry.bound ??= computeContentBound(message, config, memo));
}

function remembered(message: Message, config: ImportanceConfig, memo: EngineMemo): ContentScore {
  const key = configKey(config, memo);
  let entry = memo.contentScores.get(message);
  if (entry?.key !== key) {
    entry = { key };
    memo.contentScores.set(message, entry);
  }
  return entry;
}

/** What identifies a configuration's content weights: equal settings read twice give the same key. */
function configKey(config: ImportanceConfig, memo: EngineMemo): string {
  let key = memo.importanceKeys.get(config);
  if (key === undefined) {
    key = JSON.stringify([
      config.questionBonus,
      config.toolCallBonus,
      config.keywords,
      config.keywordBonus,
      config.lengthCap,
      config.lengthPer100Chars,
      config.codeBlockBonus,
      config.filePathBonus,
      config.decisionBonus,
    ]);
    memo.importanceKeys.set(config, key);
  }
  return key;
}

function computeContentScore(message: Message, config: ImportanceConfig, memo: EngineMemo): number {
  const prose = messageText(message);
  const calls = toolCalls(message);
  const resultTexts = toolResults(message).map((r) => plainText(r.output));
  const inputTexts = calls.map((c) => plainText(c.input));

  let score = 0;
  if (asksQuestion(message)) score += config.questionBonus;
  if (calls.length > 0) score += config.toolCallBonus;

  const keywordHits = countKeywords([prose, ...resultTexts].join('\n'), config.keywords, memo);
  score += keywordHits * config.keywordBonus;

  score += Math.min(config.lengthCap, Math.floor(prose.length / 100) * config.lengthPer100Chars);

  if (FENCE_OPENING.test(prose)) score += config.codeBlockBonus;
  if ([prose, ...inputTexts, ...resultTexts].some(mentionsFilePath)) score += config.filePathBonus;
  if (statesDecision(prose)) score += config.decisionBonus;

  return score;
}

/**
 * Scores a group of consecutive messages that must be compressed together (a tool call and its
 * results), starting at position `firstIndex` of a conversation of `total` messages. The group is
 * as important as its most important member: a routine call whose result reports a failure must not
 * be summarized away early just because the call itself looked unremarkable. An empty group scores
 * `-Infinity`, the maximum of nothing, as `Math.max()` does.
 */
export function scoreGroup(messages: readonly Message[], firstIndex: number, total: number, config: ImportanceConfig, memo: EngineMemo): number {
  let best = -Infinity;
  messages.forEach((message, offset) => {
    best = Math.max(best, scoreMessage(message, firstIndex + offset, total, config, memo));
  });
  return best;
}

/**
 * The keep list (high-importance messages kept in full): positions of the messages that score
 * at least `keepThreshold`, or that call tools or carry their results when `keepToolResults` is on,
 * taken highest score first (the newer first on a tie) while their `measure`d tokens fit
 * `keepBudgetTokens` together; a message too large for what is left is passed over for smaller
 * ones. Returned in conversation order. Nothing is kept with a budget of 0.
 */
export function selectToKeep(
  items: readonly { readonly message: Message; readonly position: number }[],
  total: number,
  config: ImportanceConfig,
  measure: (message: Message, position: number) => number,
  memo: EngineMemo,
): number[] {
  if (config.keepBudgetTokens <= 0) return [];
  const candidates: { position: number; score: number; message: Message }[] = [];
  for (const { message, position } of items) {
    const toolTraffic = config.keepToolResults && (toolCalls(message).length > 0 || toolResults(message).length > 0);
    // Most messages cannot reach the threshold: a bound from cheap checks spares them the full score.
    if (!toolTraffic && scoreBound(message, position, total, config, memo) < config.keepThreshold) continue;
    const score = scoreMessage(message, position, total, config, memo);
    if (score >= config.keepThreshold || toolTraffic)
      candidates.push({ position, score: toolTraffic ? Math.max(score, config.keepThreshold) : score, message });
  }
  candidates.sort((a, b) => b.score - a.score || b.position - a.position);
  let left = config.keepBudgetTokens;
  const kept: number[] = [];
  for (const candidate of candidates) {
    const tokens = measure(candidate.message, candidate.position);
    if (tokens > left) continue;
    left -= tokens;
    kept.push(candidate.position);
  }
  return kept.sort((a, b) => a - b);
}

/**
 * A score no lower than `scoreMessage`'s, from checks that only look for characters: a keyword
 * counts when its letters occur anywhere (the real match needs a word start), a path when the text
 * has a dot or a slash, a code block when it has a fence, a question when it has a question mark, a
 * decision whenever there is prose. Negative bonuses count as 0.
 */
function scoreBound(message: Message, index: number, total: number, config: ImportanceConfig, memo: EngineMemo): number {
  return (
    roleWeight(message.role, config) +
    config.recencyWeight * config.recencyDecay ** Math.max(0, total - 1 - index) +
    contentBound(message, config, memo)
  );
}

function computeContentBound(message: Message, config: ImportanceConfig, memo: EngineMemo): number {
  const prose = messageText(message);
  const calls = toolCalls(message);
  const haystack = [prose, ...toolResults(message).map((r) => plainText(r.output))].join('\n');
  const inputs = calls.map((c) => plainText(c.input)).join('\n');
  const lower = haystack.toLowerCase();
  const bonus = (value: number): number => Math.max(0, value);
  let bound = 0;
  if (prose.includes('?')) bound += bonus(config.questionBonus);
  if (calls.length > 0) bound += config.toolCallBonus;
  let hits = 0;
  for (const keyword of lowerKeywords(config.keywords, memo)) if (lower.includes(keyword)) hits++;
  bound += hits * bonus(config.keywordBonus);
  bound += Math.min(config.lengthCap, Math.floor(prose.length / 100) * config.lengthPer100Chars);
  if (prose.includes('```')) bound += bonus(config.codeBlockBonus);
  if (/[./\\]/.test(haystack) || /[./\\]/.test(inputs)) bound += bonus(config.filePathBonus);
  if (prose.trim() !== '') bound += bonus(config.decisionBonus);
  return bound;
}

/** The distinct keywords in lower case, made once per configuration. */
function lowerKeywords(keywords: readonly string[], memo: EngineMemo): readonly string[] {
  let lower = memo.lowerKeywords.get(keywords);
  if (lower === undefined) {
    lower = [...new Set(keywords.map((k) => k.toLowerCase()))];
    memo.lowerKeywords.set(keywords, lower);
  }
  return lower;
}

function roleWeight(role: Role, config: ImportanceConfig): number {
  switch (role) {
    case 'system':
      return config.roleSystem;
    case 'user':
      return config.roleUser;
    case 'assistant':
      return config.roleAssistant;
    case 'tool':
      return config.roleTool;
  }
}

// --- question ---------------------------------------------------------------------------------

const FENCED_BLOCK = /^ {0,3}```[\s\S]*?(?:^ {0,3}```|(?![\s\S]))/gm;
const INLINE_CODE = /`[^`\n]*`/g;
const URL_LIKE = /\b[a-z][a-z0-9+.-]*:\/\/\S*/gi;

/**
 * Only visible text parts count: a question in hidden reasoning is the model deliberating, not a
 * question put to the other side. Code and URLs are removed first because `a ? b : c`, `x?.y` and
 * `?query=` are not questions, and code is common in the conversations this runs on.
 */
function asksQuestion(message: Message): boolean {
  return message.content.some(
    (part) => part.type === 'text' && part.text.replace(FENCED_BLOCK, ' ').replace(INLINE_CODE, ' ').replace(URL_LIKE, ' ').includes('?'),
  );
}

// --- keywords ---------------------------------------------------------------------------------

const WORD_CHAR = String.raw`[\p{L}\p{N}_]`;

/**
 * Counts distinct configured keywords present in `haystack`. A keyword matches at the start of a
 * word, so 'fail' finds "failed" and "failing" but not the "fix" inside "prefix". Keywords that
 * differ only in case count once.
 */
function countKeywords(haystack: string, keywords: readonly string[], memo: EngineMemo): number {
  let patterns = memo.keywordPatterns.get(keywords);
  if (patterns === undefined) {
    const distinct = [...new Set(keywords.map((k) => k.toLowerCase()))];
    patterns = distinct.map((k) => new RegExp(`(?<!${WORD_CHAR})${escapeRegExp(k)}`, 'iu'));
    // Configurations are long-lived objects; remembering keeps scoring a long history from compiling
    // the same expressions once per message.
    memo.keywordPatterns.set(keywords, patterns);
  }
  return patterns.filter((p) => p.test(haystack)).length;
}

// --- code blocks ------------------------------------------------------------------------------

/**
 * The opening line of a Markdown fence: backticks at the start of a line, an optional info string,
 * then a line break. An unclosed fence still counts (Markdown runs it to the end, and a cut-off
 * message still carries code), while a one-line "``` like this ```" mention does not.
 */
const FENCE_OPENING = /^ {0,3}```[^`\n]*\n/m;

// --- file paths -------------------------------------------------------------------------------

/** Characters that end a path-like token in prose, Markdown and JSON. */
const TOKEN_SEPARATORS = /[\s"'`()[\]{}<>,;=|*]+/;
/** What a path is made of; a token with anything else ("a?.b", "$x/y") is code or prose. */
const PATH_CHARACTERS = /^[\p{L}\p{N}_.~@+:\\/-]+$/u;
/** A final segment with a file extension: lowercase, starting with a letter ("a.ts", ".env"). */
const EXTENSION = /\.([a-z][a-z0-9]{0,11})$/;
/** "e.g", "i.e", "b.c": single letters joined by dots are abbreviations or code, not files. */
const ABBREVIATION = /^(?:\p{L}\.)+\p{L}$/u;
/** An explicit relative or home prefix: "./", "../", "~/" (or with backslashes). */
const RELATIVE_PREFIX = /^(?:\.{1,2}|~)[\\/]/;

/**
 * Extensions that make a name without a directory count as a file. Only with a directory is any
 * extension enough: a bare "x.y" is as often a member access ("this.state", "console.log"), a
 * domain ("example.com") or a library ("Node.js" still counts, a rare false positive) as a file.
 * Names that collide with common code ("log", "env", "json") are left out for the same reason;
 * "error.log" or ".env" still count through a directory or as a dotfile.
 */
const KNOWN_EXTENSIONS = new Set([
  ...['ts', 'tsx', 'mts', 'cts', 'js', 'jsx', 'mjs', 'cjs', 'vue', 'svelte', 'astro'],
  ...['py', 'pyi', 'ipynb', 'rb', 'go', 'rs', 'java', 'kt', 'kts', 'scala', 'swift', 'dart'],
  ...['c', 'h', 'cc', 'cpp', 'cxx', 'hpp', 'hh', 'cs', 'php', 'lua', 'zig', 'ex', 'exs', 'hs'],
  ...['sh', 'bash', 'zsh', 'ps1', 'bat', 'cmd', 'sql', 'graphql', 'gql', 'proto', 'tf', 'nix'],
  ...['md', 'mdx', 'txt', 'rst', 'adoc', 'html', 'htm', 'css', 'scss', 'sass', 'less', 'xml'],
  ...['yaml', 'yml', 'toml', 'ini', 'cfg', 'conf', 'jsonc', 'json5', 'lock', 'gradle', 'csv'],
  ...['tsv', 'png', 'jpg', 'jpeg', 'gif', 'svg', 'webp', 'pdf', 'zip', 'gz', 'tgz', 'wasm'],
]);

function mentionsFilePath(haystack: string): boolean {
  return haystack.split(TOKEN_SEPARATORS).some(isPathLike);
}

/**
 * A token is a path when it has a directory and a file extension ("./a/b.py", "src/core/x.ts"), a
 * known extension without a directory ("README.md"), is a dotfile (".gitignore"), starts with an
 * explicit relative or home prefix ("./dist", "~/notes"), or has at least two separators
 * ("src/core/", "/etc/hosts"). One separator alone is not enough: "and/or", "I/O" and chat
 * commands like "/compact" are far more common in prose than a bare "src/core". URLs and tokens
 * without a letter (versions, decimals, dates) never count.
 */
function isPathLike(raw: string): boolean {
  // Trailing sentence punctuation and a ":line[:column]" suffix are not part of the path.
  const token = raw.replace(/[.,:!?]+$/, '').replace(/:\d+(?::\d+)?$/, '');
  if (token === '' || token.includes('://') || /^www\./i.test(token)) return false;
  if (!PATH_CHARACTERS.test(token) || !/\p{L}/u.test(token)) return false;

  const segments = token.split(/[\\/]/);
  const last = segments[segments.length - 1] ?? '';
  const separators = segments.length - 1;
  const extension = EXTENSION.exec(last)?.[1];

  if (separators === 0) {
    if (extension === undefined || token.includes('@') || ABBREVIATION.test(token)) return false;
    const isDotfile = last.lastIndexOf('.') === 0;
    return isDotfile || KNOWN_EXTENSIONS.has(extension);
  }
  const named = segments.filter((s) => s !== '' && s !== '.' && s !== '..');
  if (named.length === 0) return false;
  if (extension !== undefined || RELATIVE_PREFIX.test(token)) return true;
  return separators >= 2 && named.length >= 2;
}

// --- decisions --------------------------------------------------------------------------------

const DECISION_ALTERNATIVES = DECISION_PHRASES.map((p) => escapeRegExp(p).replace(/ +/g, String.raw`\s+`)).join('|');
const DECISION_PATTERN = new RegExp(`(?<!${WORD_CHAR})(?:${DECISION_ALTERNATIVES})(?!${WORD_CHAR})`, 'iu');

function statesDecision(prose: string): boolean {
  // Typographic apostrophes ("let’s") are common in model output.
  return DECISION_PATTERN.test(prose.replace(/\u2019/g, "'"));
}

function escapeRegExp(value: string): string {
  return value.replace(/[.*+?^${}()|[\]\\]/g, String.raw`\$&`);
}
