import { anthropicModels } from 'tokenlens/providers/anthropic';
import { deepseekModels } from 'tokenlens/providers/deepseek';
import { googleModels } from 'tokenlens/providers/google';
import { mistralModels } from 'tokenlens/providers/mistral';
import { openaiModels } from 'tokenlens/providers/openai';
import { openrouterModels } from 'tokenlens/providers/openrouter';
import { xaiModels } from 'tokenlens/providers/xai';
import { lazily } from '../../core/lazy';
import type { ReportedUsage } from '../../core/log';
import type { ProviderKind } from '../../core/provider-kind';
import { billingRulesFor, callCost, type BillingRules, type CostBreakdown, type ModelPrices } from '../../core/usage-cost';
import { VENDOR } from '../contributions';
import type { ModelOverride } from '../settings';

/**
 * What Longrun knows of a model's window and prices: the user's `longrun.models.overrides`, over the
 * models.dev catalogue as the `tokenlens` package ships it (bundled, read without the network), one
 * provider's list at a time. Only the lists of the providers Longrun speaks to are bundled, and those
 * of a few makers whose models OpenAI-compatible servers often serve (for their windows alone).
 *
 * A model is found by its id as given, or as a provider names a dated snapshot of it
 * (`claude-sonnet-4` → `claude-sonnet-4-20250514`); a price is taken only from an entry that is that
 * model, never from a guess: a model without one shows its tokens and no cost.
 */

/** One model of the catalogue, as `tokenlens` lists it (prices in US dollars per million tokens). */
interface RawModel {
  readonly id: string;
  readonly cost?: { readonly input?: number; readonly output?: number; readonly cache_read?: number; readonly cache_write?: number };
  readonly limit?: { readonly context?: number; readonly output?: number };
}

interface RawProvider {
  readonly name: string;
  readonly models: Readonly<Record<string, RawModel>>;
}

/**
 * The lists whose prices are those of the provider the request is sent to. Made on first use: the
 * catalogue is a file of its own, read only when a window or a price is first asked for.
 */
const BILLED_BY = lazily((): Readonly<Partial<Record<ProviderKind, RawProvider>>> => ({
  anthropic: anthropicModels,
  openai: openaiModels,
  google: googleModels,
  openrouter: openrouterModels,
}));

/** Every list bundled, searched for the window of a model of another server. */
const ALL = lazily((): readonly RawProvider[] => [
  anthropicModels,
  openaiModels,
  googleModels,
  openrouterModels,
  deepseekModels,
  mistralModels,
  xaiModels,
]);

/** A model's window and where it came from, for the gauge. */
export interface KnownWindow {
  readonly limit: number;
  /** For a person: "from the model catalogue (Anthropic)". */
  readonly origin: string;
}

/** A model's prices, whose rules bill what they leave out, and where they came from. */
export interface KnownPrices {
  readonly prices: ModelPrices;
  readonly rules: BillingRules;
  readonly origin: string;
}

/** A date at the end of a snapshot's id: `-20250514` or `-2024-08-06`. */
const SNAPSHOT_DATE = /-(\d{8}|\d{4}-\d{2}-\d{2})$/;

/** The entries of `list` that are model `id`: itself, else every dated snapshot of it. */
function entriesOf(list: RawProvider, id: string): RawModel[] {
  const exact = list.models[id];
  if (exact) return [exact];
  const snapshots: RawModel[] = [];
  for (const [key, model] of Object.entries(list.models)) {
    if (key.startsWith(`${id}-`) && SNAPSHOT_DATE.test(key) && key.replace(SNAPSHOT_DATE, '') === id) snapshots.push(model);
  }
  return snapshots;
}

/** The id's other names: without a date, without a router's prefix (`openai/`), without a local server's tag (`:8b`). */
function variants(id: string): string[] {
  const names = [id];
  const add = (name: string): void => {
    if (name && !names.includes(name)) names.push(name);
  };
  add(id.replace(SNAPSHOT_DATE, ''));
  const bare = id.includes('/') ? id.slice(id.lastIndexOf('/') + 1) : id;
  add(bare);
  add(bare.replace(/:[^:]*$/, ''));
  add(bare.replace(SNAPSHOT_DATE, ''));
  return names;
}

/** The window every entry of `entries` agrees on; undefined when they differ or have none. */
function agreedWindow(entries: readonly RawModel[]): number | undefined {
  const limits = new Set(entries.map((e) => e.limit?.context));
  const [only] = limits;
  return limits.size === 1 && only !== undefined && only > 0 ? only : undefined;
}

function pricesOf(model: RawModel): ModelPrices | undefined {
  const cost = model.cost;
  if (cost?.input === undefined || cost.output === undefined) return undefined;
  return {
    input: cost.input,
    output: cost.output,
    ...(cost.cache_read !== undefined ? { cacheRead: cost.cache_read } : {}),
    ...(cost.cache_write !== undefined ? { cacheWrite: cost.cache_write } : {}),
  };
}

/** The prices an override sets, over those of the catalogue (either may be absent). */
function withOverride(listed: ModelPrices | undefined, override: ModelOverride | undefined): ModelPrices | undefined {
  const input = override?.input ?? listed?.input;
  const output = override?.output ?? listed?.output;
  if (input === undefined || output === undefined) return undefined;
  const cacheRead = override?.cacheRead ?? listed?.cacheRead;
  const cacheWrite = override?.cacheWrite ?? listed?.cacheWrite;
  const cacheWrite1h = override?.cacheWrite1h ?? listed?.cacheWrite1h;
  return {
    input,
    output,
    ...(cacheRead !== undefined ? { cacheRead } : {}),
    ...(cacheWrite !== undefined ? { cacheWrite } : {}),
    ...(cacheWrite1h !== undefined ? { cacheWrite1h } : {}),
  };
}

/**
 * The id a model was configured with, from the key its usage is stamped with: `longrun/<endpoint>/<id>`
 * for a model of `longrun.endpoints`, `<vendor>/<id>` for one of VS Code's.
 */
export function configuredId(key: string | undefined): string | undefined {
  if (!key) return undefined;
  const parts = key.split('/');
  if (parts[0] === VENDOR && parts.length >= 3) return parts.slice(2).join('/');
  return parts.length >= 2 ? parts.slice(1).join('/') : key;
}

export class ModelCatalogue {
  /** `overrides`: `longrun.models.overrides` as it is now. */
  constructor(private readonly overrides: () => Readonly<Record<string, ModelOverride>> = () => ({})) {}

  /** The user's override of the first of `ids` that has one. */
  overrideOf(ids: readonly (string | undefined)[]): { readonly id: string; readonly override: ModelOverride } | undefined {
    const all = this.overrides();
    for (const id of ids) if (id !== undefined && all[id]) return { id, override: all[id] };
    return undefined;
  }

  /** The window the user set for `modelId` in `longrun.models.overrides`. */
  overriddenWindow(modelId: string): KnownWindow | undefined {
    const found = this.overrideOf([modelId]);
    const limit = found?.override.contextWindow;
    return limit ? { limit, origin: `from your longrun.models.overrides setting ("${found.id}")` } : undefined;
  }

  /**
   * The catalogue's window of `modelId`: in its provider's list first, then in the others, by any of
   * its names, when the entries found agree.
   */
  catalogueWindow(provider: ProviderKind | undefined, modelId: string): KnownWindow | undefined {
    const billed = provider ? BILLED_BY()[provider] : undefined;
    // The provider's own list first; a model it does not list may be known by its maker's.
    const lists = billed ? [billed, ...ALL().filter((list) => list !== billed)] : ALL();
    for (const name of variants(modelId)) {
      for (const list of lists) {
        const limit = agreedWindow(entriesOf(list, name));
        if (limit) return { limit, origin: `from the model catalogue (${list.name}${name !== modelId ? `: ${name}` : ''})` };
      }
    }
    return undefined;
  }

  /**
   * The prices of a model answering at `provider`, by the first of `ids` known (the id it was
   * configured with, then the one it answered with): the user's override over the catalogue's entry
   * of exactly that model (an entry, or the one dated snapshot of it) in the list of the provider
   * that bills it. Other servers (OpenAI-compatible ones) have only the prices the user sets.
   */
  pricesOf(provider: ProviderKind | undefined, ids: readonly (string | undefined)[]): KnownPrices | undefined {
    const override = this.overrideOf(ids);
    const list = provider ? BILLED_BY()[provider] : undefined;
    for (const id of ids) {
      if (id === undefined || !list) continue;
      const entries = entriesOf(list, id);
      const listed = entries.length === 1 ? pricesOf(entries[0]!) : undefined;
      const prices = listed && withOverride(listed, override?.override);
      if (prices)
        return {
          prices,
          rules: billingRulesFor(provider, id),
          origin: override ? 'your override over the model catalogue' : `the model catalogue (${list.name})`,
        };
    }
    const own = override && withOverride(undefined, override.override);
    return own ? { prices: own, rules: billingRulesFor(provider, override.id), origin: 'your longrun.models.overrides setting' } : undefined;
  }

  /** What one recorded call cost at its model's prices; undefined when they are not known. */
  cost(usage: ReportedUsage): CostBreakdown | undefined {
    const known = this.pricesOf(usage.provider, [configuredId(usage.model), usage.modelId]);
    if (!known) return undefined;
    return callCost(
      {
        input: usage.inputTokens,
        cacheRead: usage.cacheReadTokens ?? 0,
        cacheWrite: usage.cacheWriteTokens ?? 0,
        output: usage.outputTokens,
        ...(usage.cacheTtl ? { cacheTtl: usage.cacheTtl } : {}),
      },
      known.prices,
      known.rules,
    );
  }
}
