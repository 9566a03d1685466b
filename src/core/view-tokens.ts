import { isSummaryMessage, type LiveModelView } from './history';
import type { Message } from './messages';
import type { MessageTokenCounter, StoredTokens } from './message-tokens';

/**
 * The local token count of a live model view, kept as running sums so that the gauge costs the same
 * at twenty messages and at twenty thousand: a message is counted when it joins the view, and a view
 * derived anew (after a compaction or an undo) or another tokenizer is summed again once, mostly from
 * the counter's cache.
 */

/** The local count of a view's messages by what they are, as the gauge's breakdown shows them. */
export interface ViewTokenParts {
  readonly summary: number;
  readonly toolResults: number;
  readonly system: number;
  readonly messages: number;
}

interface Sums {
  summary: number;
  toolResults: number;
  system: number;
  messages: number;
}

export class ViewTokens {
  private view: LiveModelView | undefined;
  private counter: MessageTokenCounter | undefined;
  private generation = -1;
  /** `prefix[i]`: the tokens of the view's first i stable messages. */
  private prefix: number[] = [0];
  /** The framing part (`MessageTokenCounter.framing`) of the stable messages' count. */
  private framingSum = 0;
  private sums: Sums = { summary: 0, toolResults: 0, system: 0, messages: 0 };
  /** Where each id first occurs among the stable messages, as `findIndex` would find it. */
  private firstAt = new Map<string, number>();
  private trailing: Message | undefined;
  private trailingTokens = 0;
  private trailingFraming = 0;

  /**
   * @param storedOf the counts stored with a message's record, if any (see `StoredTokens`).
   * @param pendingOf a count to take instead, for a message being counted elsewhere (an estimate, until `reset`).
   */
  constructor(
    private readonly storedOf: (message: Message) => StoredTokens | undefined = () => undefined,
    private readonly pendingOf: (message: Message) => number | undefined = () => undefined,
  ) {}

  /** Sums the view again at the next update: counts known since replace what was taken instead. */
  reset(): void {
    this.generation = -1;
  }

  /** Takes in what joined `view` since the last update, counted by `counter`. */
  update(view: LiveModelView, counter: MessageTokenCounter): void {
    if (view !== this.view || counter !== this.counter || view.generation !== this.generation) {
      this.view = view;
      this.counter = counter;
      this.generation = view.generation;
      this.prefix = [0];
      this.framingSum = 0;
      this.sums = { summary: 0, toolResults: 0, system: 0, messages: 0 };
      this.firstAt = new Map();
    }
    const stable = view.stable;
    for (let i = this.prefix.length - 1; i < stable.length; i++) {
      const message = stable[i]!;
      const tokens = this.pendingOf(message) ?? counter.countMessage(message, this.storedOf(message));
      this.prefix.push(this.prefix[i]! + tokens);
      this.framingSum += counter.framing(message);
      this.sums[kind(message)] += tokens;
      if (!this.firstAt.has(message.id)) this.firstAt.set(message.id, i);
    }
    this.trailing = view.trailing();
    this.trailingTokens = this.trailing ? counter.countMessage(this.trailing) : 0;
    this.trailingFraming = this.trailing ? counter.framing(this.trailing) : 0;
  }

  /** The part of `total()` that is the messages' framing (role markers, call and result wrappers). */
  framing(): number {
    return this.framingSum + this.trailingFraming;
  }

  /** The local count of the whole view, as `counter.countMessages(view)` gives it. */
  total(): number {
    return this.prefix[this.prefix.length - 1]! + this.trailingTokens;
  }

  /** The local count of what follows the first message with this id; undefined when the view does not hold it. */
  after(messageId: string): number | undefined {
    const at = this.firstAt.get(messageId);
    if (at !== undefined) return this.total() - this.prefix[at + 1]!;
    return this.trailing?.id === messageId ? 0 : undefined;
  }

  /** The local count by kind of message. */
  parts(): ViewTokenParts {
    // The synthetic result that ends a view while calls are open is a tool result like any other.
    return { ...this.sums, toolResults: this.sums.toolResults + this.trailingTokens };
  }
}

function kind(message: Message): keyof Sums {
  if (isSummaryMessage(message)) return 'summary';
  if (message.role === 'tool') return 'toolResults';
  if (message.role === 'system') return 'system';
  return 'messages';
}
