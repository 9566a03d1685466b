import { wrapLanguageModel, type LanguageModel, type LanguageModelMiddleware } from 'ai';
import { cutMarker, isHighSurrogate, isLowSurrogate } from '../core/cut-marker';

/**
 * What of a streamed answer is kept. The chat shows every delta as it arrives; the conversation
 * keeps a message cut to what its store holds in a line. The AI SDK records each model call's text
 * and reasoning as they stream (twice for the call, once more for the step's messages), so without
 * a limit a 40 MB answer is held whole several times while the chat shows it, and copied again when
 * it is written. This middleware sits between the provider and the SDK: it hands each text delta,
 * whole, to `onText` as it arrives, and lets through of each text or reasoning part at most
 * `maxChars` characters: its head as it streams and, when the part ends, a marker saying what was
 * cut and its tail (kept meanwhile in a window of about `maxChars / 2`). So the step's message is
 * the answer cut in the middle, as the store cuts a long record, and no more of it than that is
 * ever held.
 */

/** Most characters of one text or reasoning part that a step's message keeps; under the store's 1 MB line. */
export const MAX_KEPT_TEXT_CHARS = 500_000;

export interface KeptTextOptions {
  readonly maxChars: number;
  /** Called with each text delta, whole, as it arrives from the provider. */
  readonly onText: (delta: string) => void;
}

/** `model` with what the SDK records of each streamed text and reasoning limited as above. */
export function withKeptText(model: LanguageModel, options: KeptTextOptions): LanguageModel {
  return wrapLanguageModel({ model: model as Parameters<typeof wrapLanguageModel>[0]['model'], middleware: keptText(options) });
}

function keptText(options: KeptTextOptions): LanguageModelMiddleware {
  return {
    specificationVersion: 'v4',
    wrapStream: async ({ doStream }) => {
      const result = await doStream();
      type Part = typeof result.stream extends ReadableStream<infer P> ? P : never;
      const kept = new KeptText<Part>(options);
      const limit = new TransformStream<Part, Part>({
        transform: (part, controller) => kept.transform(part, (out) => controller.enqueue(out)),
        flush: (controller) => kept.flush((out) => controller.enqueue(out)),
      });
      return { ...result, stream: result.stream.pipeThrough(limit) };
    },
  };
}

/** The stream parts this limits; the provider's others pass as they are. */
interface TextPart {
  readonly type: string;
  readonly id?: string;
  readonly delta?: string;
}

/** One text or reasoning part under way. */
interface Streaming<P> {
  /** The part's first delta with its text taken out: what the tail is made from (type, id, metadata). */
  template: P | undefined;
  /** Characters that arrived. */
  total: number;
  /** Characters let through as the head. */
  head: number;
  /** Whether the head is full: what arrives now goes to the tail's window. */
  full: boolean;
  /** Characters the tail may keep: what the head left of `maxChars`. */
  tailLimit: number;
  /** The latest pieces past the head: at least the tail's length once that many arrived. */
  readonly tail: string[];
  tailChars: number;
}

class KeptText<P extends TextPart> {
  private readonly streaming = new Map<string, Streaming<P>>();
  private readonly headChars: number;

  constructor(private readonly options: KeptTextOptions) {
    this.headChars = Math.ceil(options.maxChars / 2);
  }

  transform(part: P, enqueue: (part: P) => void): void {
    switch (part.type) {
      case 'text-start':
      case 'reasoning-start':
        this.streaming.set(key(part), { template: undefined, total: 0, head: 0, full: false, tailLimit: 0, tail: [], tailChars: 0 });
        break;
      case 'text-delta':
      case 'reasoning-delta': {
        if (part.type === 'text-delta' && part.delta) this.options.onText(part.delta);
        const state = this.streaming.get(key(part));
        // A delta of a part that never started is the SDK's to report.
        if (state && typeof part.delta === 'string') return this.delta(state, part, part.delta, enqueue);
        break;
      }
      case 'text-end':
      case 'reasoning-end':
        this.end(key(part), enqueue);
        break;
      default:
        break;
    }
    enqueue(part);
  }

  /** A part the stream left open still gets its tail. */
  flush(enqueue: (part: P) => void): void {
    for (const id of [...this.streaming.keys()]) this.end(id, enqueue);
  }

  private delta(state: Streaming<P>, part: P, text: string, enqueue: (part: P) => void): void {
    state.template ??= { ...part, delta: '' };
    state.total += text.length;
    if (!state.full) {
      const room = this.headChars - state.head;
      // Never end the head inside a surrogate pair: half a character is not text.
      const whole = text.length < room || (text.length === room && !isHighSurrogate(text.charCodeAt(room - 1)));
      if (whole) {
        state.head += text.length;
        enqueue(part);
        return;
      }
      const at = room > 0 && isHighSurrogate(text.charCodeAt(room - 1)) ? room - 1 : room;
      state.full = true;
      state.head += at;
      state.tailLimit = this.options.maxChars - state.head;
      if (at > 0) enqueue({ ...part, delta: text.slice(0, at) });
      this.toTail(state, text.slice(at));
      return;
    }
    this.toTail(state, text);
  }

  private toTail(state: Streaming<P>, text: string): void {
    if (text.length === 0) return;
    state.tail.push(text);
    state.tailChars += text.length;
    while (state.tail.length > 1 && state.tailChars - state.tail[0]!.length >= state.tailLimit) state.tailChars -= state.tail.shift()!.length;
  }

  /** Lets the tail through before the part's end: whole when nothing was cut, else after the marker. */
  private end(id: string, enqueue: (part: P) => void): void {
    const state = this.streaming.get(id);
    this.streaming.delete(id);
    if (!state?.template || state.tailChars === 0) return;
    let tail = state.tail.join('');
    if (state.total > this.options.maxChars) {
      let from = Math.max(0, tail.length - state.tailLimit);
      if (from < tail.length && isLowSurrogate(tail.charCodeAt(from))) from++;
      tail = cutMarker(state.total, state.head, tail.length - from) + tail.slice(from);
    }
    enqueue({ ...state.template, delta: tail });
  }
}

/** A text and a reasoning part of one call may share an id; they are told apart by kind. */
function key(part: TextPart): string {
  return `${part.type.startsWith('text') ? 'text' : 'reasoning'}:${part.id ?? ''}`;
}
