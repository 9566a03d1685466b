/**
 * An event of an object free of the editor: listeners subscribe once the objects they join exist,
 * so neither is patched after it was built.
 */

/** Stops the calls to one listener. */
export interface Subscription {
  dispose(): void;
}

/** How listeners subscribe to an event: each is called with every value fired, until it is disposed. */
export type Event<T> = (listener: (value: T) => void) => Subscription;

export class Emitter<T> {
  private readonly listeners = new Set<(value: T) => void>();

  /** Subscribes a listener; the same function subscribed twice is called once. */
  readonly event: Event<T> = (listener) => {
    this.listeners.add(listener);
    return { dispose: () => void this.listeners.delete(listener) };
  };

  /** Calls every listener with `value`, in the order they subscribed. */
  fire(value: T): void {
    for (const listener of [...this.listeners]) listener(value);
  }
}
