import { findProvider, type MatchLogic, type ModelInfo, type ModelPrice } from '@pydantic/genai-prices';
import { lazily } from '../../core/lazy';
import type { ReportedUsage } from '../../core/log';
import { findModelId, modelKey } from '../../core/model-id';
import type { ProviderKind } from '../../core/provider-kind';
import {
  billingRulesFor,
  callCost,
  type BillingRules,
  type CostBreakdown,
  type FlatPrices,
  type ModelPrices,
  type PriceTier,
} from '../../core/usage-cost';
import { VENDOR } from '../contributions';
import type { ModelOverride } from '../settings';

/**
 * What Longrun knows of a model's window and prices: the user's `longrun.models.overrides`, over the
 * model catalogue of the `@pydantic/genai-prices` package (bundled, read without the network: its
 * own updater, which would fetch newer prices, is never started), one provider's list at a time.
 * Prices are those of the provider the request is sent to; a window may come from any list (the
 * lists of a few makers whose models OpenAI-compatible servers often serve are searched too).
 *
 * A model is found by its id as the catalogue writes it, else as the same model by the one rule of
 * `core/model-id.ts` (a dated snapshot, a router's prefix, a dot for a dash), never by a guess: a
 * model without an entry shows its tokens and no cost.
 */

/** The catalogue's snapshot: its package's version, and the day that version was published. */
export const CATALOGUE_SNAPSHOT = { package: '@pydantic/genai-prices', version: '0.1.8', date: '2026-09-23' } as const;

/** The catalogue's lists of Longrun's providers, by the catalogue's provider ids. */
const PROVIDER_LISTS: Readonly<Partial<Record<ProviderKind, string>>> = {
  anthropic: 'anthropic',
  openai: 'openai',
  google: 'google',
  openrouter: 'openrouter',
};

/** The lists searched for the window of a model of another server, after its provider's own. */
const WINDOW_LISTS = ['anthropic', 'openai', 'google', 'openrouter', 'deepseek', 'mistral', 'x-ai'] as const;

/** One provider's list, indexed by each name its entries are matched by. */
interface CatalogueList {
  readonly name: string;
  /** By a name as the catalogue writes it (lower case). */
  readonly exact: ReadonlyMap<string, readonly ModelInfo[]>;
  /** By the name's model key: every way of writing that model. */
  readonly byKey: ReadonlyMap<string, readonly ModelInfo[]>;
}

/** The literal names in a catalogue entry's match rule (its patterns are not names: they are left out). */
function namesIn(match: MatchLogic, into: string[] = []): string[] {
  if ('or' in match) for (const each of match.or) namesIn(each, into);
  else if ('and' in match) for (const each of match.and) namesIn(each, into);
  else if ('equals' in match) into.push(match.equals);
  else if ('starts_with' in match) into.push(match.starts_with);
  else if ('contains' in match) into.push(match.contains);
  return into;
}

function add(map: Map<string, ModelInfo[]>, key: string, model: ModelInfo): void {
  const known = map.get(key);
  if (!known) map.set(key, [model]);
  else if (!known.includes(model)) known.push(model);
}

function indexed(id: string): CatalogueList | undefined {
  const provider = findProvider({ providerId: id });
  if (!provider) return undefined;
  const exact = new Map<string, ModelInfo[]>();
  const byKey = new Map<string, ModelInfo[]>();
  for (const model of provider.models) {
    for (const name of [model.id, ...namesIn(model.match)]) {
      add(exact, name.toLowerCase(), model);
      add(byKey, modelKey(name), model);
    }
  }
  return { name: provider.name, exact, byKey };
}

/** Each list, indexed on first use: the catalogue is a file of its own, read only when a window or a price is first asked for. */
const LISTS = lazily(() => {
  const lists = new Map<string, CatalogueList>();
  for (const id of WINDOW_LISTS) {
    const list = indexed(id);
    if (list) lists.set(id, list);
  }
  return lists;
});

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

/** The entries of `list` that are model `id`: by its name as written, else by every way of writing it. */
function entriesOf(list: CatalogueList, id: string): readonly ModelInfo[] {
  return list.exact.get(id.toLowerCase()) ?? list.byKey.get(modelKey(id)) ?? [];
}

/** The id's other names, for its window: without a router's or maker's prefix (`qwen/`), without a local server's tag (`:8b`). */
function windowNames(id: string): string[] {
  const bare = id.includes('/') ? id.slice(id.lastIndexOf('/') + 1) : id;
  return [...new Set([id, bare, bare.replace(/:[^:]*$/, '')])].filter(Boolean);
}

/** The window every entry of `entries` agrees on; undefined when they differ or have none. */
function agreedWindow(entries: readonly ModelInfo[]): number | undefined {
  const limits = new Set(entries.map((e) => e.context_window));
  const [only] = limits;
  return limits.size === 1 && only !== undefined && only > 0 ? only : undefined;
}

const DAY_MS = 86_400_000;

/**
 * The prices of `model` in force at `at` (ms since the epoch; the catalogue's own date when absent):
 * the newest that had started by then. Prices by the time of day (off-peak discounts) are left out:
 * a request is billed at the model's standing prices.
 */
function pricesInForce(model: ModelInfo, at: number | undefined): ModelPrice {
  if (!Array.isArray(model.prices)) return model.prices;
  const when = at ?? Date.parse(CATALOGUE_SNAPSHOT.date) + DAY_MS - 1;
  let chosen = model.prices[0]?.prices ?? {};
  for (const each of model.prices) {
    const constraint = each.constraint;
    if (constraint === undefined) chosen = each.prices;
    else if (constraint.type === 'start_date' && when >= Date.parse(constraint.start_date)) chosen = each.prices;
  }
  return chosen;
}

/** The catalogue's keys of the prices Longrun bills, per million tokens. */
const PRICE_KEYS: Readonly<Record<keyof FlatPrices, string>> = {
  input: 'input_mtok',
  output: 'output_mtok',
  cacheRead: 'cache_read_mtok',
  cacheWrite: 'cache_write_mtok',
  cacheWrite1h: 'cache_write_1h_mtok',
};

type CataloguePrice = ModelPrice[string];

/** A kind's price in a request of more than `above` prompt tokens (its base price at 0). */
function priceAbove(price: CataloguePrice, above: number): number | undefined {
  if (price === undefined || typeof price === 'number') return price;
  let at = price.base;
  for (const tier of [...price.tiers].sort((a, b) => a.start - b.start)) if (above >= tier.start) at = tier.price;
  return at;
}

/** Longrun's prices of a catalogue entry's prices: the base ones, and a tier at each mark any kind's price changes. */
function pricesOf(listed: ModelPrice): ModelPrices | undefined {
  const kinds = Object.entries(PRICE_KEYS) as [keyof FlatPrices, string][];
  const base: Partial<Record<keyof FlatPrices, number>> = {};
  for (const [kind, key] of kinds) {
    const price = priceAbove(listed[key], 0);
    if (price !== undefined) base[kind] = price;
  }
  if (base.input === undefined || base.output === undefined) return undefined;
  const marks = new Set<number>();
  for (const [, key] of kinds) {
    const price = listed[key];
    if (price !== undefined && typeof price !== 'number') for (const tier of price.tiers) marks.add(tier.start);
  }
  const tiers: PriceTier[] = [...marks]
    .sort((a, b) => a - b)
    .map((above) => {
      const tier: Record<string, number> = { above };
      for (const [kind, key] of kinds) {
        const price = priceAbove(listed[key], above);
        if (price !== undefined) tier[kind] = price;
      }
      return tier as unknown as PriceTier;
    });
  return { ...(base as FlatPrices & { input: number; output: number }), ...(tiers.length > 0 ? { tiers } : {}) };
}

/** The prices an override sets, over those of the catalogue (either may be absent); a price the user set holds at every tier. */
function withOverride(listed: ModelPrices | undefined, override: ModelOverride | undefined): ModelPrices | undefined {
  const input = override?.input ?? listed?.input;
  const output = override?.output ?? listed?.output;
  if (input === undefined || output === undefined) return undefined;
  const cacheRead = override?.cacheRead ?? listed?.cacheRead;
  const cacheWrite = override?.cacheWrite ?? listed?.cacheWrite;
  const cacheWrite1h = override?.cacheWrite1h ?? listed?.cacheWrite1h;
  const set = new Set(Object.keys(PRICE_KEYS).filter((kind) => override?.[kind as keyof FlatPrices] !== undefined));
  const tiers = (listed?.tiers ?? [])
    .map((tier) => Object.fromEntries(Object.entries(tier).filter(([kind]) => !set.has(kind))) as unknown as PriceTier)
    .filter((tier) => Object.keys(tier).length > 1);
  return {
    input,
    output,
    ...(cacheRead !== undefined ? { cacheRead } : {}),
    ...(cacheWrite !== undefined ? { cacheWrite } : {}),
    ...(cacheWrite1h !== undefined ? { cacheWrite1h } : {}),
    ...(tiers.length > 0 ? { tiers } : {}),
  };
}

/** The one price of `entries` at `at`: theirs when they are one entry or all agree; undefined otherwise. */
function agreedPrices(entries: readonly ModelInfo[], at: number | undefined): ModelPrices | undefined {
  const all = entries.map((entry) => pricesOf(pricesInForce(entry, at)));
  const [first] = all;
  return first && all.every((each) => JSON.stringify(each) === JSON.stringify(first)) ? first : undefined;
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

  /** The user's override of the first of `ids` that has one: for that id as written, else for the same model. */
  overrideOf(ids: readonly (string | undefined)[]): { readonly id: string; readonly override: ModelOverride } | undefined {
    const all = this.overrides();
    const named = Object.keys(all);
    for (const id of ids) {
      const found = id === undefined ? undefined : findModelId(named, id);
      if (found !== undefined && all[found]) return { id: found, override: all[found] };
    }
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
    const own = provider ? PROVIDER_LISTS[provider] : undefined;
    // The provider's own list first; a model it does not list, or lists without a window, may be known by another.
    const ids = own ? [own, ...WINDOW_LISTS.filter((id) => id !== own)] : WINDOW_LISTS;
    const lists = ids.flatMap((id) => LISTS().get(id) ?? []);
    for (const name of windowNames(modelId)) {
      for (const list of lists) {
        const limit = agreedWindow(entriesOf(list, name));
        if (limit) return { limit, origin: `from the model catalogue (${list.name}${name !== modelId ? `: ${name}` : ''})` };
      }
    }
    return undefined;
  }

  /**
   * The prices of a model answering at `provider`, by the first of `ids` known (the id it was
   * configured with, then the one it answered with), in force at `at` (the catalogue's date when
   * absent): the user's override over the catalogue's entry of that model in the list of the
   * provider that bills it. Other servers (OpenAI-compatible ones) have only the prices the user sets.
   */
  pricesOf(provider: ProviderKind | undefined, ids: readonly (string | undefined)[], at?: number): KnownPrices | undefined {
    const override = this.overrideOf(ids);
    const own = provider ? PROVIDER_LISTS[provider] : undefined;
    const list = own ? LISTS().get(own) : undefined;
    for (const id of ids) {
      if (id === undefined || !list) continue;
      const listed = agreedPrices(entriesOf(list, id), at);
      const prices = listed && withOverride(listed, override?.override);
      if (prices)
        return {
          prices,
          rules: billingRulesFor(provider, id),
          origin: override ? 'your override over the model catalogue' : `the model catalogue (${list.name})`,
        };
    }
    const mine = override && withOverride(undefined, override.override);
    return mine ? { prices: mine, rules: billingRulesFor(provider, override.id), origin: 'your longrun.models.overrides setting' } : undefined;
  }

  /** What one recorded call cost at its model's prices; undefined when they are not known. */
  cost(usage: ReportedUsage): CostBreakdown | undefined {
    const known = this.pricesOf(usage.provider, [configuredId(usage.model), usage.modelId], usage.at);
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
