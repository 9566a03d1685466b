/**
 * Checks a list of values against a union of them written elsewhere (the tags of a tagged union):
 * the list compiles only when it names every member of `T` and nothing else. Called in two steps,
 * `everyValueOf<T>()([...])`, so that `T` is given and the list's own literal types are inferred.
 */
export function everyValueOf<T extends string>(): <const L extends readonly T[]>(values: L & ([T] extends [L[number]] ? unknown : never)) => L {
  return (values) => values;
}
