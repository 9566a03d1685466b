/**
 * What a stand-in charges: every answered request's tokens by kind, and their price when the model
 * has one, so that a test or a benchmark can set what Longrun says a conversation cost against what
 * the provider would have billed for the same requests.
 *
 * Kinds are disjoint: `input` is the prompt neither read from nor written to a cache, so the prompt
 * is `input + cacheRead + cacheWrite5m + cacheWrite1h`. Providers that charge nothing to write (OpenAI
 * before its newest models, Gemini's implicit cache) bill no write tokens.
 */

/** Tokens of one request (or of several), by what they are billed as. */
export interface TokensByKind {
  readonly input: number;
  readonly cacheRead: number;
  readonly cacheWrite5m: number;
  readonly cacheWrite1h: number;
  readonly output: number;
}

/** US dollars per million tokens of each kind; a kind the provider does not bill may be left out. */
export interface Prices {
  readonly input: number;
  readonly output: number;
  readonly cacheRead?: number;
  readonly cacheWrite5m?: number;
  readonly cacheWrite1h?: number;
}

/** One answered request as billed. */
export interface Charge {
  /** The request's place in the stand-in's log. */
  readonly seq: number;
  readonly model: string;
  readonly tokens: TokensByKind;
  /** In US dollars; absent when the model has no prices. */
  readonly cost?: number;
}

export const NO_TOKENS: TokensByKind = { input: 0, cacheRead: 0, cacheWrite5m: 0, cacheWrite1h: 0, output: 0 };

/** The price of `tokens` at `prices`. A kind with tokens but no price is billed at the input price. */
export function costOf(tokens: TokensByKind, prices: Prices): number {
  const perToken = (price: number | undefined): number => (price ?? prices.input) / 1_000_000;
  return (
    tokens.input * perToken(prices.input) +
    tokens.cacheRead * perToken(prices.cacheRead) +
    tokens.cacheWrite5m * perToken(prices.cacheWrite5m) +
    tokens.cacheWrite1h * perToken(prices.cacheWrite1h) +
    tokens.output * perToken(prices.output)
  );
}

export function addTokens(a: TokensByKind, b: TokensByKind): TokensByKind {
  return {
    input: a.input + b.input,
    cacheRead: a.cacheRead + b.cacheRead,
    cacheWrite5m: a.cacheWrite5m + b.cacheWrite5m,
    cacheWrite1h: a.cacheWrite1h + b.cacheWrite1h,
    output: a.output + b.output,
  };
}

/** A stand-in's bill: its charges in order, and their sums. */
export class Bill {
  private readonly kept: Charge[] = [];

  get charges(): readonly Charge[] {
    return this.kept;
  }

  charge(seq: number, model: string, tokens: TokensByKind, prices: Prices | undefined): Charge {
    const charge: Charge = { seq, model, tokens, ...(prices ? { cost: costOf(tokens, prices) } : {}) };
    this.kept.push(charge);
    return charge;
  }

  /** Every charge's tokens summed, and the cost when every charge had one. */
  total(): { readonly tokens: TokensByKind; readonly cost?: number } {
    const tokens = this.kept.reduce((sum, c) => addTokens(sum, c.tokens), NO_TOKENS);
    const priced = this.kept.every((c) => c.cost !== undefined);
    return { tokens, ...(priced ? { cost: this.kept.reduce((sum, c) => sum + (c.cost ?? 0), 0) } : {}) };
  }

  clear(): void {
    this.kept.length = 0;
  }
}
