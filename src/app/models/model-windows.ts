import { lazily } from '../../core/lazy';
import { z } from 'zod';
import { isRecord } from '../../core/errors';
import { outputReserveFor } from '../../core/context-window';
import { DEFAULT_PROVIDER_KIND, mayCutPrompts, type ProviderKind } from '../../core/provider-kind';
import type { DiscoveredWindow } from '../../llm/window-discovery';
import { ModelCatalogue } from './model-catalogue';

/**
 * What Longrun knows about the context windows of the models it talks to, and where each number
 * came from. In order, for a model of a configured endpoint:
 *
 * 1. the user's `contextWindow` for that model in `longrun.endpoints`, else in `longrun.models.overrides`;
 * 2. what the server states (its model list, or LM Studio's, Ollama's or llama.cpp's own API),
 *    discovered in the background, cached per endpoint and model, and refreshed once per session;
 * 3. the model catalogue (`model-catalogue.ts`);
 * 4. an assumed 32,768 tokens, said to be assumed.
 *
 * A window the server itself stated by refusing a request (an overflow error) or by cutting a prompt
 * is learned per model and applies whenever it is smaller: the server has the last word on what fits.
 * Free of `vscode`: state goes through a memento-like store, so it is tested in Node.
 */

/** A window and where it came from, for the gauge's tooltip. */
export interface WindowInfo {
  /** Tokens the window holds (input and output). */
  readonly limit: number;
  /** For a person: "from the server's model list (context_length)". */
  readonly origin: string;
  /** True when the number is a guess. */
  readonly assumed: boolean;
  /**
   * True when it says what the model can hold rather than what its server runs it with (the
   * catalogue's window of a model on an OpenAI-compatible server), so that a prompt the server cut
   * may show it smaller, as it may an assumed one.
   */
  readonly loose?: boolean;
}

/** The numbers a model of an endpoint runs with. */
export interface EndpointWindow {
  readonly window: WindowInfo;
  /** Tokens kept for the answer, and sent as its `max_tokens`. */
  readonly outputReserve: number;
  /** What the conversation may fill: the window less the reserve. */
  readonly inputLimit: number;
}

/** A window learned from the server: stated in an error, or suggested by a prompt it cut (`lowerBound`). */
export interface LearnedWindow {
  readonly limit: number;
  readonly why: string;
  readonly lowerBound?: boolean;
}

export const ASSUMED_WINDOW = 32_768;
export const DEFAULT_MAX_OUTPUT = 4_096;

interface Memento {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): Thenable<void> | Promise<void>;
}

const cachedSchema = lazily(() =>
  z.object({
    limit: z.number().int().positive(),
    origin: z.string(),
    server: z.string(),
    maxOutputTokens: z.number().int().positive().optional(),
    at: z.number(),
  }),
);
type CachedDiscovery = z.infer<ReturnType<typeof cachedSchema>>;

const CACHE_KEY = 'longrun.discoveredWindows';
/** Kept this many at most, so the cache cannot grow without bound. */
const MAX_CACHED = 200;

export interface DiscoveryTarget {
  /** Cache key part: the endpoint's base URL. */
  readonly baseUrl: string;
  readonly modelId: string;
  /** The endpoint's name, to find its API key. */
  readonly endpoint?: string;
  /** The API the endpoint speaks, which decides where the window is asked; OpenAI-compatible when absent. */
  readonly provider?: ProviderKind;
}

/** What the model windows are built from. */
export interface ModelWindowsDeps {
  /** Where the windows servers stated are kept across sessions. */
  readonly memento: Memento;
  /** Asks a server for the window of one of its models. */
  readonly discover: (target: DiscoveryTarget) => Promise<DiscoveredWindow | undefined>;
  readonly now: () => number;
  readonly log?: (message: string) => void;
  /** What the catalogue and the user's overrides say of models; the catalogue alone when absent. */
  readonly catalogue?: ModelCatalogue;
}

export class ModelWindows {
  private readonly learned = new Map<string, LearnedWindow>();
  /** Learned windows that are lower bounds (a cut prompt shows the window holds at least what was read). */
  private readonly lowerBounds = new Set<string>();
  private readonly inFlight = new Map<string, Promise<void>>();
  /** Keys asked of their server in this session (successfully or not). */
  private readonly asked = new Set<string>();
  private readonly listeners = new Set<() => void>();

  private readonly catalogue: ModelCatalogue;

  constructor(private readonly deps: ModelWindowsDeps) {
    this.catalogue = deps.catalogue ?? new ModelCatalogue();
  }

  onDidChange(listener: () => void): { dispose(): void } {
    this.listeners.add(listener);
    return { dispose: () => this.listeners.delete(listener) };
  }

  /** What the server said about this model, from this session or an earlier one. */
  discovered(target: DiscoveryTarget): CachedDiscovery | undefined {
    const parsed = cachedSchema().safeParse(this.cache()[cacheKey(target)]);
    return parsed.success ? parsed.data : undefined;
  }

  /**
   * Asks the server about this model in the background, once per session (the server may have been
   * restarted with another context since the cached answer). Never blocks a request.
   */
  ensure(target: DiscoveryTarget): Promise<void> {
    const key = cacheKey(target);
    if (this.asked.has(key)) return this.inFlight.get(key) ?? Promise.resolve();
    this.asked.add(key);
    const run = this.deps
      .discover(target)
      .then(async (found) => {
        if (!found) return;
        const previous = this.discovered(target);
        const entry: CachedDiscovery = {
          limit: found.limit,
          origin: found.origin,
          server: found.server,
          ...(found.maxOutputTokens !== undefined ? { maxOutputTokens: found.maxOutputTokens } : {}),
          at: this.deps.now(),
        };
        await this.store(key, entry);
        if (!previous || previous.limit !== entry.limit || previous.maxOutputTokens !== entry.maxOutputTokens) {
          this.deps.log?.(`The server of ${target.modelId} states a ${found.limit.toLocaleString('en-US')}-token window (${found.origin}).`);
          this.changed();
        }
      })
      .catch((error: unknown) => this.deps.log?.(`Could not ask the server about ${target.modelId}'s window: ${String(error)}`))
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, run);
    return run;
  }

  /**
   * A window the provider stated by refusing a request, or suggested by cutting a prompt (then
   * `lowerBound`: the window holds at least what was read): smaller ones win.
   */
  learn(modelKey: string, limit: number, why: string, lowerBound = false): void {
    const known = this.learned.get(modelKey);
    if (known && known.limit <= limit) return;
    this.learned.set(modelKey, { limit, why, ...(lowerBound ? { lowerBound } : {}) });
    if (lowerBound) this.lowerBounds.add(modelKey);
    else this.lowerBounds.delete(modelKey);
    this.changed();
  }

  /**
   * A request of `used` tokens succeeded. A window learned from an error that it exceeds no longer
   * holds (the server was restarted with a longer context): it is forgotten. One learned from a cut
   * prompt was only a lower bound: it is raised to what was used, so that the next cut is still seen.
   */
  observe(modelKey: string, used: number): boolean {
    const known = this.learned.get(modelKey);
    if (!known || used <= known.limit) return false;
    if (this.lowerBounds.has(modelKey)) this.learned.set(modelKey, { ...known, limit: used, lowerBound: true });
    else this.learned.delete(modelKey);
    this.changed();
    return true;
  }

  /** Whether the window learned for `modelKey` is only a lower bound (suggested by a cut prompt). */
  isLowerBound(modelKey: string): boolean {
    return this.learned.has(modelKey) && this.lowerBounds.has(modelKey);
  }

  learnedWindow(modelKey: string): LearnedWindow | undefined {
    return this.learned.get(modelKey);
  }

  /** Forgets a learned window (a larger request succeeded: the server's context was raised). */
  forget(modelKey: string): boolean {
    const had = this.learned.delete(modelKey);
    if (had) this.changed();
    return had;
  }

  /**
   * The window, reserve and input room of a model of an endpoint. `configured` is what the user set
   * for it in `longrun.endpoints`; `modelKey` names it for learned windows.
   */
  forEndpointModel(
    target: DiscoveryTarget,
    modelKey: string,
    configured: { contextWindow?: number; maxOutputTokens?: number; provider?: ProviderKind },
  ): EndpointWindow {
    const found = this.discovered(target);
    const declared = declaredWindow(target.modelId, configured, found, this.catalogue);
    const override = this.catalogue.overrideOf([target.modelId])?.override.maxOutputTokens;
    const maxOutput = configured.maxOutputTokens ?? override ?? found?.maxOutputTokens ?? DEFAULT_MAX_OUTPUT;
    return withReserve(applyLearned(declared, this.learned.get(modelKey)), maxOutput);
  }

  private cache(): Record<string, unknown> {
    const value = this.deps.memento.get<unknown>(CACHE_KEY);
    return isRecord(value) ? value : {};
  }

  private async store(key: string, entry: CachedDiscovery): Promise<void> {
    const all = { ...this.cache(), [key]: entry };
    const keys = Object.keys(all);
    if (keys.length > MAX_CACHED) {
      const at = (k: string): number => cachedSchema().safeParse(all[k]).data?.at ?? 0;
      keys.sort((a, b) => at(a) - at(b));
      for (const old of keys.slice(0, keys.length - MAX_CACHED)) delete all[old];
    }
    await this.deps.memento.update(CACHE_KEY, all);
  }

  private changed(): void {
    for (const listener of [...this.listeners]) listener();
  }
}

function cacheKey(target: DiscoveryTarget): string {
  return `${target.baseUrl.trim().replace(/\/+$/, '')}|${target.modelId}`;
}

function declaredWindow(
  modelId: string,
  configured: { contextWindow?: number; provider?: ProviderKind },
  found: CachedDiscovery | undefined,
  catalogue: ModelCatalogue,
): WindowInfo {
  if (configured.contextWindow !== undefined && configured.contextWindow > 0) {
    return { limit: configured.contextWindow, origin: 'from your longrun.endpoints setting', assumed: false };
  }
  const overridden = catalogue.overriddenWindow(modelId);
  if (overridden) return { ...overridden, assumed: false };
  if (found && found.limit > 0) return { limit: found.limit, origin: `from ${found.origin}`, assumed: false };
  const known = catalogue.catalogueWindow(configured.provider, modelId);
  if (known) return { ...known, assumed: false, ...(mayCutPrompts(configured.provider ?? DEFAULT_PROVIDER_KIND) ? { loose: true } : {}) };
  return {
    limit: ASSUMED_WINDOW,
    origin: 'assumed: the server states no window and the model catalogue does not know it; set "contextWindow" for it in longrun.endpoints',
    assumed: true,
  };
}

/** Whether a window learned from the provider replaces the one declared: when smaller, or when none is declared (0). */
export function learnedWins(declared: number, learned: number | undefined): learned is number {
  return learned !== undefined && (declared <= 0 || learned < declared);
}

/**
 * A window the server stated by refusing a request, when smaller than the declared one; one a cut
 * prompt suggests only when the declared one is assumed or loose: a window the provider, the
 * catalogue or the user states is never shrunk by an inference.
 */
export function applyLearned(declared: WindowInfo, learned: LearnedWindow | undefined): WindowInfo {
  if (!learned || !learnedWins(declared.limit, learned.limit)) return declared;
  if (learned.lowerBound && !declared.assumed && !declared.loose) return declared;
  return { limit: learned.limit, origin: learned.why, assumed: false };
}

/** The output reserve rule: the model's maximum output, at most min(16,384, 25% of the window). */
export function withReserve(window: WindowInfo, maxOutput: number | undefined): EndpointWindow {
  const outputReserve = outputReserveFor(window.limit, maxOutput);
  return { window, outputReserve, inputLimit: Math.max(1, window.limit - outputReserve) };
}

/** The model a window is worked out for: a `longrun.endpoints` model as resolved, or one of VS Code's. */
export type WindowedModel =
  | {
      readonly kind: 'endpoint';
      /** Its window as resolved (declared, discovered from the server, or learned), and its answer's room. */
      readonly resolved: EndpointWindow;
      /** The most it may answer, when the endpoint or its server says. */
      readonly maxOutput?: number;
    }
  | {
      readonly kind: 'vscode';
      readonly vendor: string;
      /** Its `maxInputTokens`; 0 or less when it declares none. */
      readonly maxInputTokens: number;
    };

const SETTING_ORIGIN = 'from your longrun.contextWindow setting';

/**
 * The one rule for the window of the model in use. `longrun.contextWindow` (`setting`; for a model of
 * VS Code's, else its `longrun.models.overrides` window) wins over what the model declares, and a window the provider showed smaller (`learned`) wins over both. An endpoint
 * model's resolved window already holds what was discovered or learned; a model of VS Code's declares
 * its input limit, its answer's room being its provider's business, and a window learned from its
 * server is a whole window, the reserve rule keeping room for the answer. Undefined when nothing is known.
 */
export function windowFor(
  model: WindowedModel,
  setting: number | { readonly limit: number; readonly origin: string } | undefined,
  learned: LearnedWindow | undefined,
): EndpointWindow | undefined {
  const set = typeof setting === 'number' ? { limit: setting, origin: SETTING_ORIGIN } : setting;
  const fromSetting = set && set.limit > 0 ? applyLearned({ ...set, assumed: false }, learned) : undefined;
  if (model.kind === 'endpoint') return fromSetting ? withReserve(fromSetting, model.maxOutput) : model.resolved;
  if (fromSetting) return withReserve(fromSetting, undefined);
  const declaredInput = model.maxInputTokens > 0 ? model.maxInputTokens : undefined;
  const fromServer = learned ? withReserve({ limit: learned.limit, origin: learned.why, assumed: false }, undefined) : undefined;
  if (declaredInput === undefined || (fromServer && !learned?.lowerBound && fromServer.inputLimit < declaredInput)) return fromServer;
  return {
    window: { limit: declaredInput, origin: `declared by ${model.vendor}'s model in VS Code (maxInputTokens)`, assumed: false },
    outputReserve: 0,
    inputLimit: declaredInput,
  };
}
