/**
 * Takes credentials out of text before it is shown or logged. Providers echo what they were sent: a
 * 401 body can hold the bearer token, a proxy error the whole request URL with its `?key=`. The text
 * goes to the chat, the output channel and traces, so every secret in it is replaced by `[redacted]`.
 *
 * Two kinds of evidence: the secrets the caller knows (the API keys it sent), which are replaced
 * wherever and however they appear, and the shapes of well-known keys, for the ones it does not know
 * (a key from the environment of a proxy, another endpoint's key in a forwarded error). The shapes are
 * kept tight (a known prefix and a long run of key characters) so ordinary words and identifiers
 * survive: text without secrets comes back unchanged.
 */

/** What every secret is replaced by. */
export const REDACTED = '[redacted]';

/** Known secrets shorter than this are not replaced: they would take ordinary words with them. */
export const MIN_KNOWN_SECRET_LENGTH = 8;

/** Values of `api_key=` and the like shorter than this are placeholders (`null`, `***`), not keys. */
const MIN_ASSIGNED_LENGTH = 8;

/**
 * Key shapes with a recognisable prefix. Each starts where no letter or digit precedes it, so the
 * prefix is never the tail of a longer word ("task-", "desk-").
 */
const KEY_PATTERNS: readonly RegExp[] = [
  // OpenAI (sk-, sk-proj-, sk-svcacct-, sk-admin-), OpenRouter (sk-or-v1-), Anthropic (sk-ant-api03-), DeepSeek and others.
  /(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{20,}/g,
  // xAI.
  /(?<![A-Za-z0-9])xai-[A-Za-z0-9_-]{20,}/g,
  // Groq.
  /(?<![A-Za-z0-9])gsk_[A-Za-z0-9]{20,}/g,
  // Hugging Face.
  /(?<![A-Za-z0-9])hf_[A-Za-z0-9]{20,}/g,
  // Perplexity.
  /(?<![A-Za-z0-9])pplx-[A-Za-z0-9]{20,}/g,
  // Replicate.
  /(?<![A-Za-z0-9])r8_[A-Za-z0-9]{20,}/g,
  // NVIDIA.
  /(?<![A-Za-z0-9])nvapi-[A-Za-z0-9_-]{20,}/g,
  // Google (Gemini, Vertex express keys).
  /(?<![A-Za-z0-9])AIza[A-Za-z0-9_-]{35}/g,
  // GitHub tokens (Copilot and Models endpoints take them).
  /(?<![A-Za-z0-9])(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{22,})/g,
  // AWS access key ids (Bedrock).
  /(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])/g,
  // JSON web tokens: three base64url parts, the first two starting with `{"`.
  /(?<![A-Za-z0-9])eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
];

/**
 * `Bearer <token>`, any case. The token must look like one (a digit in it, or 20 characters), so
 * "the bearer instrument" stays as written.
 */
const BEARER = /(?<![A-Za-z0-9])(bearer\s+)([A-Za-z0-9._~+/=-]{8,})/gi;

/**
 * `api_key=…`, `apikey: …`, `"api_key": "…"`, `x-api-key: …`, `access_token=…`, also inside JSON
 * that was itself put in a string (`\"api_key\": \"…\"`). The name and its quotes stay; the value goes.
 */
const ASSIGNMENT =
  /(?<![A-Za-z0-9])(\\*["']?(?:x-)?(?:api[_-]?key|access[_-]?token|auth[_-]?token|refresh[_-]?token|client[_-]?secret|secret[_-]?key)\\*["']?\s*[:=]\s*\\*["']?)([^\s"'\\&,;<>{}[\]()]+)/gi;

/** A query parameter that carries a key (`?key=` is how Google's APIs take one). */
const QUERY_KEY = /([?&](?:key|api[_-]?key|access[_-]?token|token)=)([^&#\s"'<>]+)/gi;

/**
 * `text` with every secret replaced by `[redacted]`: each known secret (at least 8 characters long)
 * verbatim, JSON-escaped or URL-encoded; bearer tokens; keys of the common providers' shapes; and
 * the values of `api_key`-style assignments and `?key=` parameters.
 */
export function redactSecrets(text: string, knownSecrets: readonly string[] = []): string {
  let out = redactKnown(text, knownSecrets);
  for (const pattern of KEY_PATTERNS) out = out.replace(pattern, REDACTED);
  out = out.replace(BEARER, (match, scheme: string, token: string) => (looksLikeToken(token) ? scheme + REDACTED : match));
  out = out.replace(ASSIGNMENT, (match, name: string, value: string) => (isSecretValue(value) ? name + REDACTED : match));
  out = out.replace(QUERY_KEY, (match, name: string, value: string) => (isSecretValue(value) ? name + REDACTED : match));
  return out;
}

/**
 * The exact values of the keys in use, each under the name of where it came from (an endpoint's
 * stored key, a variable of the environment): known when a key is read or set, forgotten when it is
 * deleted. Found in any text by one expression, made again only when the keys change, in every form
 * a value takes in what is written (as it is, JSON-encoded once or twice, URL-encoded), whatever
 * characters it holds; while no key is known, nothing is looked for.
 */
export class KnownSecrets {
  private readonly values = new Map<string, string>();
  private matcher: RegExp | undefined;

  /** Knows `value` as the key of `source`, in place of the one it had; an empty value forgets it. */
  set(source: string, value: string | undefined): void {
    if (value === undefined || value.trim().length === 0) {
      this.delete(source);
      return;
    }
    if (this.values.get(source) === value) return;
    this.values.set(source, value);
    this.matcher = matcherOf([...this.values.values()]);
  }

  /** Forgets the key of `source`. */
  delete(source: string): void {
    if (!this.values.delete(source)) return;
    this.matcher = matcherOf([...this.values.values()]);
  }

  /** The values known, for the shapes' redaction that is told of them. */
  list(): string[] {
    return [...this.values.values()];
  }

  /** Whether `text` holds a known key, in any of its forms. */
  found(text: string): boolean {
    return this.matcher !== undefined && text.search(this.matcher) >= 0;
  }

  /** `text` with every form of every known key replaced by `[redacted]`; `text` itself when it holds none. */
  redact(text: string): string {
    const matcher = this.matcher;
    if (matcher === undefined || text.search(matcher) < 0) return text;
    let out = text;
    // A key that holds the marker's own characters could be formed again around a replacement:
    // after a few passes such a one is dropped without a marker (each drop shortens the text).
    for (let pass = 0; pass < 4 && out.search(matcher) >= 0; pass++) out = out.replace(matcher, REDACTED);
    while (out.search(matcher) >= 0) out = out.replace(matcher, '');
    return out;
  }

  /**
   * `value` with every string in it (however deep, in arrays and plain objects) redacted; the value
   * itself, not a copy, when none held a key.
   */
  redactDeep<T>(value: T): T {
    if (this.matcher === undefined) return value;
    return this.deep(value) as T;
  }

  private deep(value: unknown): unknown {
    if (typeof value === 'string') return this.redact(value);
    if (Array.isArray(value)) {
      let changed = false;
      const out = value.map((item: unknown) => {
        const next = this.deep(item);
        if (next !== item) changed = true;
        return next;
      });
      return changed ? out : value;
    }
    if (value === null || typeof value !== 'object') return value;
    let changed = false;
    const out: Record<string, unknown> = {};
    for (const [key, item] of Object.entries(value)) {
      const next = this.deep(item);
      if (next !== item) changed = true;
      out[key] = next;
    }
    return changed ? out : value;
  }
}

/** The forms a key takes in text: as it is, JSON-encoded (once, or twice for JSON put in a string), URL-encoded. */
function formsOf(secrets: readonly string[]): string[] {
  const forms = new Set<string>();
  const json = (text: string): string => JSON.stringify(text).slice(1, -1);
  for (const raw of secrets) {
    for (const secret of new Set([raw, raw.trim()])) {
      if (secret.length < MIN_KNOWN_SECRET_LENGTH) continue;
      for (const form of [secret, json(secret), json(json(secret)), urlEncoded(secret)]) {
        if (form.length >= MIN_KNOWN_SECRET_LENGTH) forms.add(form);
      }
    }
  }
  // Longest first, so a secret that contains another is replaced whole rather than in pieces.
  return [...forms].sort((a, b) => b.length - a.length);
}

/** `text` as a URL carries it; itself when it cannot be (a lone surrogate). */
function urlEncoded(text: string): string {
  try {
    return encodeURIComponent(text);
  } catch {
    return text;
  }
}

/** One expression that finds every form of `secrets`, each taken literally; undefined when there are none. */
function matcherOf(secrets: readonly string[]): RegExp | undefined {
  const forms = formsOf(secrets);
  if (forms.length === 0) return undefined;
  return new RegExp(forms.map((form) => form.replace(/[.*+?^${}()|[\]\\/-]/g, '\\$&')).join('|'), 'g');
}

function redactKnown(text: string, knownSecrets: readonly string[]): string {
  const forms = new Set<string>();
  for (const raw of knownSecrets) {
    const secret = raw.trim();
    if (secret.length < MIN_KNOWN_SECRET_LENGTH) continue;
    // How a key appears once an error body was JSON-encoded, or a URL carried it.
    for (const form of [secret, JSON.stringify(secret).slice(1, -1), encodeURIComponent(secret)]) {
      if (form.length >= MIN_KNOWN_SECRET_LENGTH) forms.add(form);
    }
  }
  // Longest first, so a secret that contains another is replaced whole rather than in pieces.
  const ordered = [...forms].sort((a, b) => b.length - a.length);
  let out = text;
  for (const form of ordered) {
    // A secret that contains the marker's own characters could be formed again around a
    // replacement; after a few passes such a one is dropped without a marker (each drop shortens
    // the text, so this ends).
    for (let pass = 0; pass < 4 && out.includes(form); pass++) out = out.split(form).join(REDACTED);
    while (out.includes(form)) out = out.split(form).join('');
  }
  return out;
}

function looksLikeToken(token: string): boolean {
  return /\d/.test(token) || token.length >= 20;
}

/** Values that say a key is absent; keeping them is what makes "no key was sent" diagnosable. */
const PLACEHOLDER = /^(?:null|undefined|none|nil|missing|empty|unset|not[_-]?set|true|false|[*x.]+)$/i;

function isSecretValue(value: string): boolean {
  return value.length >= MIN_ASSIGNED_LENGTH && !value.startsWith(REDACTED) && !PLACEHOLDER.test(value);
}
