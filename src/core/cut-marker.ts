/**
 * The marker left where the middle of a long text was cut out, the same wherever Longrun cuts one
 * (a stored record, an answer streamed longer than a message is kept), so that the model and the
 * user read one form. It stands on a line of its own between the kept head and tail.
 */
export function cutMarker(total: number, head: number, tail: number): string {
  return `\n[… cut by Longrun: ${thousands(total)} characters in all; the first ${thousands(head)} and the last ${thousands(tail)} are kept]\n`;
}

/** `n` with thousands separators, as messages show sizes. */
export function thousands(n: number): string {
  return n.toLocaleString('en-US');
}

export function isHighSurrogate(code: number): boolean {
  return code >= 0xd800 && code <= 0xdbff;
}

export function isLowSurrogate(code: number): boolean {
  return code >= 0xdc00 && code <= 0xdfff;
}
