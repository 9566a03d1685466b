/**
 * How the stand-ins count tokens: a rule of their own for each provider, which shares nothing with
 * Longrun's count (no tokenizer, no vocabulary, none of `src/core/tokenizer-priors.ts`), so that
 * Longrun meets in the suite what it meets in the world: a provider whose count it can only learn.
 *
 * Text is cut into pieces by the kind of character: a word (split where its case changes, as code
 * names are), a run of capitals, of other letters, of digits, of spaces, of newlines, of punctuation.
 * A word's leading space is part of it. Each kind of piece costs a number of tokens by its length and
 * a length per token of each provider's own, so prose, code, JSON and numbers come out in different
 * proportions for each:
 *
 * - OpenAI (its o-series and GPT models): long words and number groups of three per token, so about
 *   what a byte-pair vocabulary of 200k entries counts; its framing, 3 tokens a message and 3 to
 *   prime the reply; tool definitions counted as OpenAI renders them for the model (a TypeScript-like
 *   declaration, shorter than their JSON).
 * - Anthropic (Claude): shorter words, digits two at a time, punctuation and indentation in smaller
 *   pieces, so code and JSON count noticeably more than prose; 3 tokens a message, more around a tool
 *   call and a tool result; and whenever the request offers tools, the hidden tool-use system prompt
 *   Claude's API adds (346 tokens with `auto` or `none` as the tool choice, 313 with `any` or `tool`).
 * - Gemini: every digit a token, punctuation one a character, a few tokens a turn; tools as their JSON.
 *
 * Deterministic: the same text always counts the same. How far each is from Longrun's local count is
 * not designed to match anything Longrun assumes; `test/unit/scripted-model/tokens.test.ts` pins only
 * that the providers disagree with each other and with Longrun the way real ones do.
 */

export type TokenFamily = 'openai' | 'anthropic' | 'google';

/** Characters per token of each kind of piece. */
interface PieceLengths {
  readonly word: number;
  readonly capitals: number;
  /** Letters outside ASCII. */
  readonly letters: number;
  readonly digits: number;
  readonly spaces: number;
  readonly newlines: number;
  readonly punctuation: number;
}

/** One provider's counting rule. */
export interface TokenRule {
  readonly family: TokenFamily;
  /** The tokens of a text. */
  count(text: string): number;
  /** The text's tokens as pieces of it, in order: as many as `count`, for caches that compare token sequences. */
  tokens(text: string): string[];
  /** Tokens of framing around each message (a turn, for Gemini). */
  readonly perMessage: number;
  /** Tokens of framing around a tool call, besides its name and arguments. */
  readonly perToolCall: number;
  /** Tokens of framing around a tool result, besides its content. */
  readonly perToolResult: number;
  /** Tokens to prime the reply. */
  readonly perRequest: number;
  /** Tokens the API adds, unseen, to a request that offers tools, by the request's tool choice. */
  toolUsePrompt(choice: string | undefined): number;
}

const LENGTHS: Record<TokenFamily, PieceLengths> = {
  openai: { word: 9, capitals: 4, letters: 2, digits: 3, spaces: 16, newlines: 4, punctuation: 3 },
  anthropic: { word: 6, capitals: 2, letters: 1, digits: 2, spaces: 4, newlines: 2, punctuation: 2 },
  google: { word: 7, capitals: 3, letters: 2, digits: 1, spaces: 4, newlines: 2, punctuation: 1.5 },
};

const FRAMING: Record<TokenFamily, Pick<TokenRule, 'perMessage' | 'perToolCall' | 'perToolResult' | 'perRequest'>> = {
  openai: { perMessage: 3, perToolCall: 3, perToolResult: 0, perRequest: 3 },
  anthropic: { perMessage: 3, perToolCall: 9, perToolResult: 5, perRequest: 1 },
  google: { perMessage: 4, perToolCall: 2, perToolResult: 2, perRequest: 0 },
};

/** Claude's tool-use system prompt: with a tool choice of `auto` or `none`, and of `any` or `tool`. */
export const ANTHROPIC_TOOL_USE_PROMPT = { auto: 346, forced: 313 } as const;

/** The pieces, longest first within each alternative; a word takes its leading space. */
const PIECE = / ?[A-Z]?[a-z]+| ?[A-Z]+(?![a-z])| ?\p{L}+|\d+| ?[^\s\p{L}\d]+\n*| +(?= \S)| +|\n+|\s/gu;

type Kind = keyof PieceLengths;

function kindOf(piece: string): Kind {
  const c = piece.trimStart()[0] ?? piece[0]!;
  if (/[a-z]/.test(c) || (/[A-Z]/.test(c) && /[a-z]/.test(piece))) return 'word';
  if (/[A-Z]/.test(c)) return 'capitals';
  if (/\p{L}/u.test(c)) return 'letters';
  if (/\d/.test(c)) return 'digits';
  if (c === ' ') return 'spaces';
  if (c === '\n') return 'newlines';
  if (/\s/.test(c)) return 'spaces';
  return 'punctuation';
}

/** The counting rule of `family`'s API. */
export function tokenRule(family: TokenFamily): TokenRule {
  const lengths = LENGTHS[family];
  const split = (text: string): string[] => {
    const out: string[] = [];
    for (const match of text.matchAll(PIECE)) {
      const piece = match[0];
      const kind = kindOf(piece);
      const body = kind === 'spaces' ? piece : piece.trimStart();
      const n = Math.max(1, Math.ceil([...body].length / lengths[kind]));
      if (n === 1) out.push(piece);
      else {
        const chars = [...piece];
        const size = Math.ceil(chars.length / n);
        for (let i = 0; i < chars.length; i += size) out.push(chars.slice(i, i + size).join(''));
      }
    }
    return out;
  };
  return {
    family,
    count: (text) => (text ? split(text).length : 0),
    tokens: (text) => (text ? split(text) : []),
    ...FRAMING[family],
    toolUsePrompt: (choice) =>
      family !== 'anthropic' ? 0 : choice === 'any' || choice === 'tool' ? ANTHROPIC_TOOL_USE_PROMPT.forced : ANTHROPIC_TOOL_USE_PROMPT.auto,
  };
}

/** A function tool as Chat Completions and the Responses API define it. */
export interface FunctionDefinition {
  readonly name: string;
  readonly description?: string | undefined;
  readonly parameters?: unknown;
}

/**
 * Tool definitions as OpenAI renders them for its models: a namespace of TypeScript-like function
 * types, each with its description as a comment. Shorter than their JSON, as OpenAI counts them.
 */
export function renderedFunctions(tools: readonly FunctionDefinition[]): string {
  const lines = ['namespace functions {'];
  for (const tool of tools) {
    if (tool.description) lines.push(`// ${tool.description}`);
    lines.push(`type ${tool.name} = (_: ${typeText(tool.parameters)}) => any;`);
  }
  lines.push('}');
  return lines.join('\n');
}

function typeText(schema: unknown): string {
  if (!schema || typeof schema !== 'object') return 'any';
  const s = schema as { type?: unknown; properties?: Record<string, unknown>; required?: unknown; items?: unknown; enum?: unknown };
  if (Array.isArray(s.enum)) return s.enum.map((v) => JSON.stringify(v)).join(' | ');
  if (s.type === 'array') return `${typeText(s.items)}[]`;
  if (s.type === 'object' || s.properties) {
    const required = new Set(Array.isArray(s.required) ? s.required.map(String) : []);
    const fields = Object.entries(s.properties ?? {}).map(([name, value]) => {
      const description = (value as { description?: unknown } | null)?.description;
      const comment = typeof description === 'string' ? `// ${description}\n` : '';
      return `${comment}${name}${required.has(name) ? '' : '?'}: ${typeText(value)},`;
    });
    return `{\n${fields.join('\n')}\n}`;
  }
  if (s.type === 'integer') return 'number';
  return typeof s.type === 'string' ? s.type : 'any';
}
