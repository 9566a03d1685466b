import { lazily } from '../../core/lazy';
import { z } from 'zod';
import { isRecord } from '../../core/errors';

/**
 * The models whose server let them call a tool when asked for a summary with `tool_choice: "none"`
 * (Ollama's OpenAI layer does not read the field): their summaries are asked for with the plain
 * request, which offers no tools, instead of as a continuation of the conversation.
 *
 * Kept in VS Code's global state, beside what servers state about their models: the behaviour
 * belongs to the server and the model, not to a workspace, so neither a reload nor another window
 * pays for the tool call again. An entry is forgotten after `REMEMBERED_MS`, so that a server
 * updated since gets the continuation (and its prompt cache) back; being wrong then costs one
 * request, after which the summary is asked for plainly anyway. Free of `vscode`: state goes through
 * a memento-like store.
 */

interface Memento {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

const KEY = 'longrun.ignoredToolChoice';
/** How long a model is asked plainly after its server let it call a tool. */
export const REMEMBERED_MS = 30 * 24 * 60 * 60 * 1000;
/** Kept this many models at most, the oldest dropped first. */
const MAX_MODELS = 100;

const entrySchema = lazily(() => z.object({ at: z.number(), tools: z.array(z.string()).max(20) }));
const storedSchema = lazily(() => z.object({ version: z.literal(1), models: z.custom<Record<string, unknown>>(isRecord) }));
type Entry = z.infer<ReturnType<typeof entrySchema>>;

/** What the memory of servers that ignore tool_choice is built from: where it keeps what it learned, the clock, and where it says what it did. */
export interface IgnoredToolChoiceDeps {
  readonly memento: Memento;
  readonly now: () => number;
  readonly log?: (message: string) => void;
}

export class IgnoredToolChoice {
  /** Noted in this session, whatever the store did with them. */
  private readonly noted = new Map<string, number>();

  constructor(private readonly deps: IgnoredToolChoiceDeps) {}

  /** Whether the server of `model` was seen letting it call a tool under `tool_choice: "none"`, lately. */
  ignores(model: string): boolean {
    const at = this.noted.get(model) ?? entrySchema().safeParse(this.models()[model]).data?.at;
    return at !== undefined && this.deps.now() - at < REMEMBERED_MS;
  }

  /** The server of `model` let it call `calledTools` under `tool_choice: "none"`. */
  note(model: string, calledTools: readonly string[]): void {
    const at = this.deps.now();
    if (this.ignores(model)) return;
    this.noted.set(model, at);
    this.deps.log?.(
      `${model} answered a summary request with a call of ${calledTools.join(', ')} although tool_choice was "none": its server does not hold it to that. ` +
        'Its summaries are asked for without the conversation’s tools from now on.',
    );
    const all: Record<string, unknown> = { ...this.models(), [model]: { at, tools: calledTools.slice(0, 20) } satisfies Entry };
    const names = Object.keys(all);
    if (names.length > MAX_MODELS) {
      const when = (name: string): number => entrySchema().safeParse(all[name]).data?.at ?? 0;
      names.sort((a, b) => when(a) - when(b));
      for (const old of names.slice(0, names.length - MAX_MODELS)) delete all[old];
    }
    void Promise.resolve(this.deps.memento.update(KEY, { version: 1, models: all })).catch((error: unknown) =>
      this.deps.log?.(`Could not keep that ${model}'s server ignores tool_choice: ${String(error)}`),
    );
  }

  private models(): Record<string, unknown> {
    const parsed = storedSchema().safeParse(this.deps.memento.get<unknown>(KEY));
    return parsed.success ? parsed.data.models : {};
  }
}
