/**
 * The few things every layer needs to say about an unknown thrown value, written once: its text,
 * whether it is a plain record, and whether it is one of Longrun's own error classes.
 */

/**
 * The text of a thrown value: an error's message (its name when the message is empty), a string as
 * it is, an object's `message` when it has one, else the value as a string.
 */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message !== '' ? error.message : error.name;
  if (typeof error === 'string') return error;
  if (isRecord(error) && typeof error.message === 'string') return error.message;
  return String(error);
}

/** A non-null object that is not an array: what JSON objects and option bags look like. */
export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/**
 * Whether `error` carries `marker`, a `Symbol.for` key an error class sets on its instances. Unlike
 * `instanceof`, this holds across copies of a class (two bundles, two versions of a module), the
 * way the AI SDK's `isInstance` checks do.
 */
export function hasMarker(error: unknown, marker: symbol): boolean {
  return typeof error === 'object' && error !== null && (error as Record<symbol, unknown>)[marker] === true;
}

/**
 * Marks an instance with `marker`, for `hasMarker`. A defined property rather than a class field,
 * so that it exists in every build and is not flagged as never read.
 */
export function mark(error: Error, marker: symbol): void {
  Object.defineProperty(error, marker, { value: true, enumerable: false });
}
