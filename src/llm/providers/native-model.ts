/** What every provider's factory is given to make one model of an endpoint. */
export interface NativeModelRequest {
  /** The endpoint's name in `longrun.endpoints`, for messages. */
  readonly endpoint: string;
  /** The API root requests go to (see `apiRoot`). */
  readonly root: string;
  /** The model id the provider knows. */
  readonly id: string;
  /** The endpoint's key from secret storage; always present for a native provider. */
  readonly apiKey: string;
  /** Injectable for tests. */
  readonly fetch?: typeof fetch;
}
