import { errorText } from '../../core/errors';
import { oneIdEach } from '../../core/model-id';
import { Emitter, type Event } from '../emitter';
import type { EndpointSetting } from '../settings';

/** How an endpoint's models are listed: the ids its server serves, in its order. */
export type ListModels = (endpoint: EndpointSetting, signal: AbortSignal) => Promise<string[]>;

/** A listing of one endpoint: under way, done, or failed (and why). */
type Listing =
  | { readonly kind: 'listing'; readonly controller: AbortController }
  | { readonly kind: 'listed'; readonly ids: readonly string[] }
  | { readonly kind: 'failed'; readonly reason: string };

export interface ListedModelsDeps {
  readonly list: ListModels;
  /** Said once per failure of an endpoint's listing (the log), with what to do. */
  readonly warn: (message: string) => void;
}

/**
 * The models of endpoints configured without any (`models` left out or empty): the server is asked
 * for its list once per session (`ensure`), and the models are offered once it answers, one entry
 * for each model (an alias and its dated snapshots are one: `core/model-id.ts`). A listing
 * that fails is said once and not tried again until `forget` (the endpoints or the keys changed).
 * An endpoint is known by its name, URL and provider: changing any of them lists it again.
 */
export class ListedModels {
  private readonly listings = new Map<string, Listing>();
  private readonly changed = new Emitter<void>();
  /** Fires when a listing ends with models, so the models offered changed. */
  readonly onDidChange: Event<void> = this.changed.event;

  constructor(private readonly deps: ListedModelsDeps) {}

  /** The ids listed for `endpoint`; empty while it is being listed, when it failed, or before `ensure`. */
  idsOf(endpoint: EndpointSetting): readonly string[] {
    const listing = this.listings.get(keyOf(endpoint));
    return listing?.kind === 'listed' ? listing.ids : [];
  }

  /** Starts listing each endpoint configured without models that was not listed yet. */
  ensure(endpoints: readonly EndpointSetting[]): void {
    for (const endpoint of endpoints) {
      if (endpoint.models.length > 0) continue;
      const key = keyOf(endpoint);
      if (this.listings.has(key)) continue;
      const controller = new AbortController();
      const listing: Listing = { kind: 'listing', controller };
      this.listings.set(key, listing);
      void this.deps.list(endpoint, controller.signal).then(
        (listed) => {
          const ids = oneIdEach(listed);
          if (this.listings.get(key) !== listing) return;
          this.listings.set(key, { kind: 'listed', ids });
          if (ids.length === 0)
            this.deps.warn(`The endpoint "${endpoint.name}" lists no models at ${endpoint.baseUrl}; name them in longrun.endpoints (its "models").`);
          else this.changed.fire();
        },
        (error: unknown) => {
          if (this.listings.get(key) !== listing) return;
          const reason = errorText(error);
          this.listings.set(key, { kind: 'failed', reason });
          this.deps.warn(
            `The models of the endpoint "${endpoint.name}" could not be listed (${reason}). ` +
              'Check that its server runs and its key is set ("Longrun: Set API Key"), or name its models in longrun.endpoints (its "models").',
          );
        },
      );
    }
  }

  /** Forgets every listing (the endpoints or their keys changed): the next `ensure` lists again. */
  forget(): void {
    for (const listing of this.listings.values()) if (listing.kind === 'listing') listing.controller.abort();
    this.listings.clear();
  }
}

function keyOf(endpoint: EndpointSetting): string {
  return JSON.stringify([endpoint.name, endpoint.baseUrl, endpoint.provider ?? '']);
}
