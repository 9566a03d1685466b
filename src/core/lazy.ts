/**
 * A value made on first use, then kept. Schemas are built this way rather than when their module
 * loads: building a zod schema runs a good deal of code, and the extension's activation (which
 * loads every module) should not pay for stores, ledgers and tools it has not touched yet.
 */
export function lazily<T>(make: () => T): () => T {
  let made: { readonly value: T } | undefined;
  return () => (made ??= { value: make() }).value;
}
