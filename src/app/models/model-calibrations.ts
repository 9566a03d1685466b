import { lazily } from '../../core/lazy';
import { z } from 'zod';
import { isRecord } from '../../core/errors';
import { familyPrior, type RatioPrior } from '../../core/tokenizer-priors';
import type { CalibrationMemory } from '../../core/usage-calibration';

/**
 * Each model's ratio of the provider's count to the local one, as conversations learn it, kept in
 * VS Code's global state: the next conversation with the model starts calibrated instead of from its
 * family's table figure (or from no ratio at all). Versioned and checked when read back: an entry
 * that does not parse is ignored. Free of `vscode`: state goes through a memento-like store.
 */

interface Memento {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

const KEY = 'longrun.calibrations';
/** Kept this many models at most, the least recently learned dropped first. */
const MAX_MODELS = 200;

const entrySchema = lazily(() =>
  z.object({
    ratio: z.number().min(0.5).max(2),
    tokens: z.number().int().min(0),
    at: z.number(),
  }),
);
const storedSchema = lazily(() => z.object({ version: z.literal(1), models: z.custom<Record<string, unknown>>(isRecord) }));
type Entry = z.infer<ReturnType<typeof entrySchema>>;

/** What the memory of model calibrations is built from: where it keeps what it learned, the clock, and where it says what it did. */
export interface ModelCalibrationsDeps {
  readonly memento: Memento;
  readonly now: () => number;
  readonly log?: (message: string) => void;
}

export class ModelCalibrations implements CalibrationMemory {
  constructor(private readonly deps: ModelCalibrationsDeps) {}

  prior(model: string | undefined): RatioPrior | undefined {
    if (model !== undefined) {
      const entry = entrySchema().safeParse(this.models()[model]);
      if (entry.success) return { ratio: entry.data.ratio, tokens: entry.data.tokens };
    }
    return familyPrior(model);
  }

  learned(model: string, ratio: RatioPrior): void {
    const models = this.models();
    const known = entrySchema().safeParse(models[model]);
    // The same numbers again (a request's report that moved nothing) are not written.
    if (known.success && Math.abs(known.data.ratio - ratio.ratio) < 0.0005 && known.data.tokens === Math.round(ratio.tokens)) return;
    const all: Record<string, unknown> = {
      ...models,
      [model]: { ratio: ratio.ratio, tokens: Math.round(ratio.tokens), at: this.deps.now() } satisfies Entry,
    };
    const names = Object.keys(all);
    if (names.length > MAX_MODELS) {
      const at = (name: string): number => entrySchema().safeParse(all[name]).data?.at ?? 0;
      names.sort((a, b) => at(a) - at(b));
      for (const old of names.slice(0, names.length - MAX_MODELS)) delete all[old];
    }
    void Promise.resolve(this.deps.memento.update(KEY, { version: 1, models: all })).catch((error: unknown) =>
      this.deps.log?.(`Could not keep what Longrun learned of ${model}'s token counts: ${String(error)}`),
    );
  }

  private models(): Record<string, unknown> {
    const parsed = storedSchema().safeParse(this.deps.memento.get<unknown>(KEY));
    return parsed.success ? parsed.data.models : {};
  }
}
