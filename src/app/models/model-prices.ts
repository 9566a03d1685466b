import type { ModelPrices } from '../../core/usage-cost';
import { VENDOR } from '../contributions';
import type { EndpointSetting } from '../settings';
import type { ModelCatalogue } from './model-catalogue';

/**
 * What a model call of Longrun's endpoints cost, at the prices Longrun knows for the model: the
 * user's `longrun.models.overrides` over the model catalogue's entry for the provider the endpoint
 * speaks, as the gauge prices the conversation's own requests. The editor's own models say no price,
 * and no price is guessed.
 */

/** The prices known for the model whose key (`longrun/<endpoint>/<model>`) is `key`; undefined when none are. */
export function pricesOfKey(
  catalogue: Pick<ModelCatalogue, 'pricesOf'>,
  endpoints: readonly EndpointSetting[],
  key: string,
): ModelPrices | undefined {
  for (const endpoint of endpoints) {
    for (const model of endpoint.models) {
      if (`${VENDOR}/${endpoint.name}/${model.id}` === key) return catalogue.pricesOf(endpoint.provider ?? 'openai-compatible', [model.id])?.prices;
    }
  }
  return undefined;
}

/**
 * What `usage` costs at `prices`, in US dollars (input and output; a subagent's usage names no cache),
 * at the base prices: a subagent's usage adds up many requests, and a long-context tier is a request's own.
 */
export function costAt(
  prices: Pick<ModelPrices, 'input' | 'output'>,
  usage: { readonly inputTokens: number; readonly outputTokens: number },
): number {
  return (usage.inputTokens * prices.input + usage.outputTokens * prices.output) / 1_000_000;
}

/** What `usage` on the model `key` cost, when its prices are known; undefined otherwise. */
export function usageCost(
  catalogue: Pick<ModelCatalogue, 'pricesOf'>,
  endpoints: readonly EndpointSetting[],
  usage: { readonly inputTokens: number; readonly outputTokens: number },
  key: string,
): number | undefined {
  const prices = pricesOfKey(catalogue, endpoints, key);
  return prices ? costAt(prices, usage) : undefined;
}
