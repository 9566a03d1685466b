import { wrapLanguageModel, type LanguageModel, type LanguageModelMiddleware } from 'ai';

/**
 * One deadline from the moment a model request is sent to its first token, response headers
 * included: a server that accepts the connection and never answers is stopped like one that answers
 * and then sends nothing. (The AI SDK's own first-chunk timer starts only once the headers have
 * arrived.) A call that does not stream (`generateText`) has its answer as its first token.
 *
 * The timeout is a `TimeoutError` whose message says "first chunk timeout", as the AI SDK's own,
 * so `isModelTimeout` and the chat's message treat both alike.
 */

/** Nothing came back from the model within the deadline. */
export class FirstTokenTimeout extends Error {
  override readonly name = 'TimeoutError';

  constructor(readonly timeoutMs: number) {
    super(`First chunk timeout of ${timeoutMs}ms exceeded: nothing came back from the model since the request was sent.`);
  }
}

/** Stream parts that carry no token: the provider sends them as soon as it has the headers. */
const NOT_A_TOKEN = new Set(['stream-start', 'response-metadata', 'raw']);

/** `model` with the deadline on each call; `timeoutMs` undefined or not positive leaves it as it is. */
export function withFirstTokenDeadline(model: LanguageModel, timeoutMs: number | undefined): LanguageModel {
  if (timeoutMs === undefined || !(timeoutMs > 0)) return model;
  return wrapLanguageModel({ model: model as Parameters<typeof wrapLanguageModel>[0]['model'], middleware: firstTokenDeadline(timeoutMs) });
}

function firstTokenDeadline(timeoutMs: number): LanguageModelMiddleware {
  return {
    specificationVersion: 'v4',
    wrapGenerate: async ({ params, model }) => {
      const deadline = new Deadline(timeoutMs, params.abortSignal);
      try {
        return await deadline.guard(model.doGenerate({ ...params, abortSignal: deadline.signal }));
      } finally {
        deadline.clear();
      }
    },
    wrapStream: async ({ params, model }) => {
      const deadline = new Deadline(timeoutMs, params.abortSignal);
      let result: Awaited<ReturnType<typeof model.doStream>>;
      try {
        result = await deadline.guard(model.doStream({ ...params, abortSignal: deadline.signal }));
      } catch (error) {
        deadline.clear();
        throw error;
      }
      type Part = typeof result.stream extends ReadableStream<infer P> ? P : never;
      const untilFirstToken = new TransformStream<Part, Part>({
        start: (controller) => deadline.onExpired((reason) => controller.error(reason)),
        transform: (part, controller) => {
          if (!NOT_A_TOKEN.has(part.type)) deadline.clear();
          controller.enqueue(part);
        },
        flush: () => deadline.clear(),
      });
      return { ...result, stream: result.stream.pipeThrough(untilFirstToken) };
    },
  };
}

/** A timer that aborts the call's signal with a {@link FirstTokenTimeout} unless cleared first. */
class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: ReturnType<typeof setTimeout>;
  private expired: ((reason: FirstTokenTimeout) => void) | undefined;
  /** Rejects when the deadline passes, so a call that ignores its signal cannot hold the caller. */
  private readonly expiry: Promise<never>;
  readonly signal: AbortSignal;

  constructor(timeoutMs: number, caller: AbortSignal | undefined) {
    this.signal = caller ? AbortSignal.any([caller, this.controller.signal]) : this.controller.signal;
    let reject: (reason: FirstTokenTimeout) => void = () => undefined;
    this.expiry = new Promise<never>((_, fail) => (reject = fail));
    this.expiry.catch(() => undefined);
    this.timer = setTimeout(() => {
      const reason = new FirstTokenTimeout(timeoutMs);
      this.controller.abort(reason);
      reject(reason);
      this.expired?.(reason);
    }, timeoutMs);
  }

  onExpired(listener: (reason: FirstTokenTimeout) => void): void {
    this.expired = listener;
  }

  clear(): void {
    clearTimeout(this.timer);
    this.expired = undefined;
  }

  /** `call`, failing with the timeout (not the abort it caused) once the deadline has passed. */
  async guard<T>(call: PromiseLike<T>): Promise<T> {
    try {
      return await Promise.race([call, this.expiry]);
    } catch (error) {
      const reason: unknown = this.controller.signal.reason;
      throw reason instanceof FirstTokenTimeout ? reason : error;
    }
  }
}
