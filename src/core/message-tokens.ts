import { stringifyOutput, type Message } from './messages';
import type { TextTokenizer } from './tokenizer';

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

/**
 * Counts messages, remembering each message's count: messages are immutable, so a history that
 * grew by one message costs only the new message to count again.
 */
export class MessageTokenCounter {
  private readonly cache = new WeakMap<Message, number>();

  constructor(
    readonly tokenizer: TextTokenizer,
    private readonly overheads: TokenOverheads = DEFAULT_OVERHEADS,
  ) {}

  countText(value: string): number {
    return this.tokenizer.count(value);
  }

  countMessage(message: Message): number {
    const cached = this.cache.get(message);
    if (cached !== undefined) return cached;
    const counted = this.measure(message);
    this.cache.set(message, counted);
    return counted;
  }

  countMessages(messages: readonly Message[]): number {
    let total = 0;
    for (const message of messages) total += this.countMessage(message);
    return total;
  }

  private measure(message: Message): number {
    const o = this.overheads;
    let total = o.perMessage;
    for (const part of message.content) {
      switch (part.type) {
        case 'text':
        case 'reasoning':
          total += this.tokenizer.count(part.text);
          break;
        case 'tool-call':
          total += o.perToolCall + this.tokenizer.count(part.toolName) + this.tokenizer.count(stringifyOutput(part.input));
          break;
        case 'tool-result':
          total += o.perToolResult + this.tokenizer.count(stringifyOutput(part.output));
          break;
        case 'file':
          total += o.perFile;
          break;
      }
    }
    return total;
  }
}
