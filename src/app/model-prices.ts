import { VENDOR } from './contributions';
import type { EndpointSetting, ModelPrice } from './settings';

/**
 * What model calls cost, from the prices the user set on Longrun's endpoint models
 * (`longrun.endpoints`, each model's `price`). No other price is known: the editor's own models say
 * none, and a price guessed from a table would be shown as if it were the bill.
 */

/** The price set for the model whose key (`longrun/<endpoint>/<model>`) is `key`; undefined when none is. */
export function priceOf(endpoints: readonly EndpointSetting[], key: string): ModelPrice | undefined {
  for (const endpoint of endpoints) {
    for (const model of endpoint.models) {
      if (`${VENDOR}/${endpoint.name}/${model.id}` === key) return model.price;
    }
  }
  return undefined;
}

/** What `usage` costs at `price`, in US dollars. */
export function costAt(price: ModelPrice, usage: { readonly inputTokens: number; readonly outputTokens: number }): number {
  return (usage.inputTokens * price.input + usage.outputTokens * price.output) / 1_000_000;
}

/** What `usage` on the model `key` cost, when its price is set; undefined otherwise. */
export function usageCost(
  endpoints: readonly EndpointSetting[],
  usage: { readonly inputTokens: number; readonly outputTokens: number },
  key: string,
): number | undefined {
  const price = priceOf(endpoints, key);
  return price ? costAt(price, usage) : undefined;
}
