import type { LogRecord, StoredTokens } from './log';

export type { StoredTokens };
import { stringifyOutput, type Message, type ToolResultPart } from './messages';
import { charEstimator, type TextTokenizer } from './tokenizer';

/** Fixed costs that chat formats add around the text they carry. */
export interface TokenOverheads {
  /** Role marker and separators of one message. */
  readonly perMessage: number;
  /** Framing of one tool call (id, type, braces) besides its name and arguments. */
  readonly perToolCall: number;
  /** Framing of one tool result besides its output. */
  readonly perToolResult: number;
  /** An image or other attachment, whose real cost depends on the provider. */
  readonly perFile: number;
}

export const DEFAULT_OVERHEADS: TokenOverheads = {
  perMessage: 4,
  perToolCall: 8,
  perToolResult: 6,
  perFile: 800,
};

/** Strings longer than this are counted each time: remembering them would cost more memory than counting saves. */
const REMEMBERED_MAX_CHARS = 64 * 1024;
/** All remembered strings together: past this, they are forgotten at once and remembered anew. */
const REMEMBERED_TOTAL_CHARS = 4 * 1024 * 1024;

/**
 * Counts messages, remembering each message's count: messages are immutable, so a history that
 * grew by one message costs only the new message to count again.
 */
export class MessageTokenCounter {
  private readonly cache = new WeakMap<Message, number>();
  private readonly derived = new WeakMap<object, { readonly key: string; readonly tokens: number; others?: Map<string, number> }>();
  private remembered = new Map<string, number>();
  private rememberedChars = 0;

  constructor(
    readonly tokenizer: TextTokenizer,
    private readonly overheads: TokenOverheads = DEFAULT_OVERHEADS,
  ) {}

  countText(value: string): number {
    return this.tokenizer.count(value);
  }

  /**
   * Counts a message. `stored` is what its record holds, if anything: a count by this counter's
   * tokenizer is taken instead of counting again (a reloaded conversation is not tokenized anew).
   */
  countMessage(message: Message, stored?: StoredTokens): number {
    const cached = this.cache.get(message);
    if (cached !== undefined) return cached;
    const known = stored?.[this.tokenizer.name];
    const counted = known !== undefined ? known + this.framing(message) : this.measure(message);
    this.cache.set(message, counted);
    return counted;
  }

  /**
   * The tokens of one tool output of `message`, as `countMessage` counts it: taken from the message's
   * own count (remembered, or stored with it) when the output is all the message holds, which is the
   * common case, so that looking at every output of a long conversation tokenizes nothing again.
   */
  countToolOutput(message: Message, part: ToolResultPart): number {
    if (message.content.length === 1 && message.content[0] === part) return this.countMessage(message) - this.framing(message);
    return this.countDerived(part, 'output', () => stringifyOutput(part.output));
  }

  /** Whether `message` has been counted (its count is remembered). */
  isCounted(message: Message): boolean {
    return this.cache.has(message);
  }

  /**
   * A quick estimate of what `countMessage` would give, about four characters a token, and the
   * characters it looked at: for a count that is being made elsewhere (off the editor's thread).
   */
  estimate(message: Message): { tokens: number; chars: number } {
    let chars = 0;
    for (const part of message.content) {
      if (part.type === 'text' || part.type === 'reasoning') chars += part.text.length;
      else if (part.type === 'tool-call') chars += part.toolName.length + stringifyOutput(part.input).length;
      else if (part.type === 'tool-result') chars += stringifyOutput(part.output).length;
    }
    return { tokens: Math.ceil(chars / 4) + this.framing(message), chars };
  }

  countMessages(messages: readonly Message[]): number {
    let total = 0;
    for (const message of messages) total += this.countMessage(message);
    return total;
  }

  /**
   * What to store with a message's record so that a reload need not count it again; undefined for
   * the chars/4 estimate, which is as quick to compute as a stored number is to read.
   */
  storedTokens(message: Message): StoredTokens | undefined {
    if (this.tokenizer.name === charEstimator.name) return undefined;
    return { [this.tokenizer.name]: this.countMessage(message) - this.framing(message) };
  }

  /**
   * Counts text made from an immutable object (a message as rendered for the summarizer with given
   * limits), once per object and `key`. `text` may be given as a function, called only when the
   * count is not known yet, when making the text costs more than looking the count up.
   */
  countDerived(owner: object, key: string, text: string | (() => string)): number {
    const known = this.derived.get(owner);
    if (known?.key === key) return known.tokens;
    const other = known?.others?.get(key);
    if (other !== undefined) return other;
    const counted = this.tokenizer.count(typeof text === 'string' ? text : text());
    // Most owners are only ever counted with one key: a map of their own only for those with more.
    if (!known) this.derived.set(owner, { key, tokens: counted });
    else (known.others ??= new Map()).set(key, counted);
    return counted;
  }

  /**
   * Counts text that comes back often (a summarizer's system prompt and directive, a message's
   * header), remembering recent strings up to a few megabytes in all.
   */
  countRemembered(value: string): number {
    if (value.length > REMEMBERED_MAX_CHARS) return this.tokenizer.count(value);
    const cached = this.remembered.get(value);
    if (cached !== undefined) return cached;
    const counted = this.tokenizer.count(value);
    if (this.rememberedChars + value.length > REMEMBERED_TOTAL_CHARS) {
      this.remembered = new Map();
      this.rememberedChars = 0;
    }
    this.remembered.set(value, counted);
    this.rememberedChars += value.length;
    return counted;
  }

  /** The fixed costs of a message's framing (part of its count), which stored counts leave out. */
  framing(message: Message): number {
    const o = this.overheads;
    let total = o.perMessage;
    for (const part of message.content) {
      if (part.type === 'tool-call') total += o.perToolCall;
      else if (part.type === 'tool-result') total += o.perToolResult;
      else if (part.type === 'file') total += o.perFile;
    }
    return total;
  }

  private measure(message: Message): number {
    let total = this.framing(message);
    for (const part of message.content) {
      switch (part.type) {
        case 'text':
        case 'reasoning':
          total += this.tokenizer.count(part.text);
          break;
        case 'tool-call':
          total += this.tokenizer.count(part.toolName) + this.tokenizer.count(stringifyOutput(part.input));
          break;
        case 'tool-result':
          total += this.tokenizer.count(stringifyOutput(part.output));
          break;
        case 'file':
          break;
      }
    }
    return total;
  }
}

/**
 * A message record with the message's count by `counter`'s tokenizer added (other records as they
 * are), for the store to keep with the message so that a reload need not count it again.
 */
export function withTokenCounts(record: LogRecord, counter: MessageTokenCounter): LogRecord {
  if (record.type !== 'message' || record.tokens?.[counter.tokenizer.name] !== undefined) return record;
  const tokens = counter.storedTokens(record.message);
  return tokens ? { ...record, tokens: { ...record.tokens, ...tokens } } : record;
}
