/**
 * How many tokens a model's context window holds, asked of the server that runs it. The OpenAI
 * model list (`GET {baseUrl}/models`) states it on most gateways, on OpenRouter and on vLLM; local
 * servers keep it behind their own APIs (LM Studio, Ollama, llama.cpp), which are asked next, all at
 * once. A native provider is asked through its own API: Anthropic's Models API (`max_input_tokens`,
 * `max_tokens`) and Gemini's models list (`inputTokenLimit`, `outputTokenLimit`); OpenAI's model
 * list states no window.
 *
 * Everything here is best effort: a server that is down, slow, answers a web page, an error or JSON
 * of another shape simply has nothing to say, and the caller falls back to its configured window.
 */
import { lazily } from '../core/lazy';
import { findModelId } from '../core/model-id';
import { z } from 'zod';
import { DEFAULT_PROVIDER_KIND, type ProviderKind } from '../core/provider-kind';
import { apiRoot as providerRoot } from './providers/api-roots';
import { authHeaders } from './providers/auth-headers';

/** The server software behind an endpoint, as far as its answers tell. */
export type ServerKind = 'openai' | 'openrouter' | 'anthropic' | 'google' | 'vllm' | 'lmstudio' | 'ollama' | 'llamacpp' | 'openai-compatible';

/** A context window a server stated for one of its models. */
export interface DiscoveredWindow {
  /** Tokens the model's context window holds (input + output). */
  readonly limit: number;
  /** Which server software answered, when it could be told. */
  readonly server: ServerKind;
  /** Where the number came from, for a person, e.g. "Ollama's loaded model (/api/ps)". */
  readonly origin: string;
  /** The model's maximum output tokens, when the server states it (e.g. OpenRouter top_provider.max_completion_tokens). */
  readonly maxOutputTokens?: number;
}

/** What {@link discoverContextWindow} needs to know. */
export interface DiscoveryOptions {
  /** The API root as configured, usually ending in /v1, e.g. `http://127.0.0.1:11434/v1`. */
  readonly baseUrl: string;
  /** The id the server knows, e.g. `qwen2.5-coder:7b`. */
  readonly modelId: string;
  /** The API the endpoint speaks; OpenAI-compatible when absent. */
  readonly provider?: ProviderKind;
  /** Sent as the provider expects it (`Authorization: Bearer …`, `x-api-key`, `x-goog-api-key`), and only to the base URL's origin. */
  readonly apiKey?: string;
  /** Injectable for tests. */
  readonly fetch?: typeof fetch;
  /** Per HTTP request; default 2000. */
  readonly timeoutMs?: number;
  /** Ends discovery early; it then resolves to undefined. */
  readonly signal?: AbortSignal;
}

const DEFAULT_TIMEOUT_MS = 2000;

/**
 * The context window of `modelId` as its server states it. Reads the model list first; when that
 * says nothing about the window, asks LM Studio's, Ollama's and llama.cpp's native APIs
 * concurrently and keeps the most telling answer (see {@link Confidence}).
 *
 * Never throws, never retries, and settles within about two timeouts (the list, then the probes
 * together); a model list that times out ends the search, as a server that slow answers nothing.
 * Resolves to undefined when nothing could be learned.
 */
export async function discoverContextWindow(options: DiscoveryOptions): Promise<DiscoveredWindow | undefined> {
  try {
    if (options.signal?.aborted) return undefined;
    const http = new JsonClient(options);
    const provider = options.provider ?? DEFAULT_PROVIDER_KIND;
    const root = providerRoot(provider, options.baseUrl);
    if (provider === 'anthropic') return await askAnthropic(http, root, options.modelId);
    if (provider === 'google') return await askGemini(http, root, options.modelId);
    const listed = await readModelList(http, root, options.modelId);
    if (listed.window) return listed.window;
    if (listed.timedOut || options.signal?.aborted) return undefined;
    // Hosted APIs have no native side to ask; probing them would only collect 404s.
    if (provider !== 'openai-compatible' || listed.kind === 'openai' || listed.kind === 'openrouter' || listed.kind === 'vllm') return undefined;
    return await probeNativeApis(http, apiRoot(options.baseUrl), options.modelId);
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------
// The model list
// ---------------------------------------------------------------------------------------------

/**
 * A token count as the servers state it. A field that is missing, null, negative, fractional or not
 * a number is taken as unstated rather than failing the whole entry.
 */
const TOKENS = lazily(() => z.number().int().positive().optional().catch(undefined));
const TEXT = lazily(() => z.string().optional().catch(undefined));

const MODEL_LIST = lazily(() => z.looseObject({ data: z.array(z.unknown()) }));

const LISTED_MODEL = lazily(() =>
  z.looseObject({
    id: z.string(),
    owned_by: TEXT(),
    /** OpenRouter's (the most any of its providers serves) and many gateways'. */
    context_length: TOKENS(),
    /** vLLM's: the length the engine was started with (`--max-model-len`), not the trained one. */
    max_model_len: TOKENS(),
    /** Groq's. */
    context_window: TOKENS(),
    /** Mistral's and LM Studio's (the model's maximum, not what it is loaded with). */
    max_context_length: TOKENS(),
    /** LM Studio's, on a loaded model: what the instance was actually loaded with. */
    loaded_context_length: TOKENS(),
    compatibility_type: TEXT(),
    /** Groq's output cap. */
    max_completion_tokens: TOKENS(),
    /** OpenRouter's; the default provider requests go to first. */
    top_provider: z.looseObject({ context_length: TOKENS(), max_completion_tokens: TOKENS() }).optional().catch(undefined),
    canonical_slug: TEXT(),
    /**
     * llama.cpp's: `n_ctx` is the per-slot context it runs with (recent builds); `n_ctx_train`, also
     * there, is only the trained length and is never read.
     */
    meta: z.looseObject({ n_ctx: TOKENS() }).optional().catch(undefined),
  }),
);
type ListedModel = z.infer<ReturnType<typeof LISTED_MODEL>>;

interface ListReading {
  readonly window?: DiscoveredWindow;
  /** What the list says about the server, whether or not it holds the model. */
  readonly kind?: ServerKind;
  readonly timedOut: boolean;
}

async function readModelList(http: JsonClient, baseUrl: string, modelId: string): Promise<ListReading> {
  const answer = await http.get(`${trimSlash(baseUrl)}/models`);
  if (!('json' in answer)) return { timedOut: answer.failure === 'timeout', kind: kindFromHost(baseUrl) };
  const list = MODEL_LIST().safeParse(answer.json);
  if (!list.success) return { timedOut: false, kind: kindFromHost(baseUrl) };

  const entries = list.data.data.flatMap((raw) => {
    const entry = LISTED_MODEL().safeParse(raw);
    return entry.success ? [entry.data] : [];
  });
  const listedId = findModelId(
    entries.map((candidate) => candidate.id),
    modelId,
  );
  const entry = entries.find((candidate) => candidate.id === listedId);
  const kind = entry
    ? listedKind(entry, baseUrl)
    : (entries.map((other) => listedKind(other, baseUrl)).find((k) => k !== 'openai-compatible') ?? kindFromHost(baseUrl));
  if (!entry) return { timedOut: false, kind };
  const stated = statedWindow(entry);
  if (!stated) return { timedOut: false, kind };
  const maxOutputTokens = entry.top_provider?.max_completion_tokens ?? entry.max_completion_tokens;
  return {
    timedOut: false,
    kind,
    window: {
      limit: stated.limit,
      server: kind,
      origin: `the server's model list (${stated.field})`,
      ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
    },
  };
}

/**
 * The window an entry states, by the field that best describes what requests get: what the server
 * runs with first, then what it serves at most. For OpenRouter the model-level `context_length` wins
 * over `top_provider.context_length`: OpenRouter routes each request to a provider able to take its
 * prompt size, so the model-level figure (the largest any provider serves) is the real ceiling, and
 * the top provider's is only read when the model-level one is missing.
 */
function statedWindow(entry: ListedModel): { limit: number; field: string } | undefined {
  const fields: [string, number | undefined][] = [
    ['meta.n_ctx', entry.meta?.n_ctx],
    ['loaded_context_length', entry.loaded_context_length],
    ['max_model_len', entry.max_model_len],
    ['context_length', entry.context_length],
    ['top_provider.context_length', entry.top_provider?.context_length],
    ['context_window', entry.context_window],
    ['max_context_length', entry.max_context_length],
  ];
  for (const [field, limit] of fields) if (limit !== undefined) return { limit, field };
  return undefined;
}

/** The server behind a model list entry; `owned_by` values are the ones each server writes for itself. */
function listedKind(entry: ListedModel, baseUrl: string): ServerKind {
  if (entry.top_provider !== undefined || entry.canonical_slug !== undefined) return 'openrouter';
  switch (entry.owned_by) {
    case 'vllm':
      return 'vllm';
    case 'llamacpp':
      return 'llamacpp';
    case 'organization_owner':
      return 'lmstudio';
  }
  if (entry.loaded_context_length !== undefined || entry.compatibility_type !== undefined) return 'lmstudio';
  return kindFromHost(baseUrl);
}

function kindFromHost(baseUrl: string): ServerKind {
  switch (hostOf(baseUrl)) {
    case 'api.openai.com':
      return 'openai';
    case 'openrouter.ai':
      return 'openrouter';
    default:
      return 'openai-compatible';
  }
}

// ---------------------------------------------------------------------------------------------
// Native providers' own APIs
// ---------------------------------------------------------------------------------------------

const ANTHROPIC_MODEL = lazily(() =>
  z.looseObject({
    id: z.string(),
    /** The most input the model takes, its context window. */
    max_input_tokens: TOKENS(),
    /** The most `max_tokens` may be. */
    max_tokens: TOKENS(),
  }),
);

/** Anthropic's Models API, `GET {root}/models/{id}`, which also resolves an alias to its model. */
async function askAnthropic(http: JsonClient, root: string, modelId: string): Promise<DiscoveredWindow | undefined> {
  const answer = await http.get(`${root}/models/${encodeURIComponent(modelId)}`);
  const model = 'json' in answer ? ANTHROPIC_MODEL().safeParse(answer.json) : undefined;
  const limit = model?.success ? model.data.max_input_tokens : undefined;
  if (!model?.success || limit === undefined) return undefined;
  const maxOutputTokens = model.data.max_tokens;
  return {
    limit,
    server: 'anthropic',
    origin: "Anthropic's Models API (max_input_tokens)",
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
  };
}

const GEMINI_MODEL = lazily(() =>
  z.looseObject({
    name: z.string(),
    /** The most input tokens a request may hold. */
    inputTokenLimit: TOKENS(),
    /** The most tokens an answer may hold. */
    outputTokenLimit: TOKENS(),
  }),
);

/**
 * The Gemini API's `GET {root}/models/{id}`. Its input limit is taken as the whole window: the answer
 * has a limit of its own, but taking it out of the input limit too only compacts a little early.
 */
async function askGemini(http: JsonClient, root: string, modelId: string): Promise<DiscoveredWindow | undefined> {
  const path = modelId.includes('/') ? modelId : `models/${encodeURIComponent(modelId)}`;
  const answer = await http.get(`${root}/${path}`);
  const model = 'json' in answer ? GEMINI_MODEL().safeParse(answer.json) : undefined;
  const limit = model?.success ? model.data.inputTokenLimit : undefined;
  if (!model?.success || limit === undefined) return undefined;
  const maxOutputTokens = model.data.outputTokenLimit;
  return {
    limit,
    server: 'google',
    origin: "the Gemini API's model (inputTokenLimit)",
    ...(maxOutputTokens !== undefined ? { maxOutputTokens } : {}),
  };
}

// ---------------------------------------------------------------------------------------------
// Native APIs of local servers
// ---------------------------------------------------------------------------------------------

/**
 * How much an answer is worth, highest first. Only one kind of server normally answers; the order
 * matters when several probes of the same server do (Ollama's /api/ps and /api/show), or when a
 * server imitates another's API (llama.cpp answers Ollama's /api/show).
 */
const Confidence = {
  /** An assumed default. */
  Default: 0,
  /** The model's advertised maximum, which a load may well not use. */
  Advertised: 1,
  /** What the model is configured to load with. */
  Configured: 2,
  /** What the running model was loaded with. */
  Loaded: 3,
} as const;
type Confidence = (typeof Confidence)[keyof typeof Confidence];

interface Candidate extends DiscoveredWindow {
  readonly confidence: Confidence;
}

async function probeNativeApis(http: JsonClient, root: string, modelId: string): Promise<DiscoveredWindow | undefined> {
  const answers = await Promise.all([
    probeLmStudioV0(http, root, modelId),
    probeLmStudioV1(http, root, modelId),
    probeOllama(http, root, modelId),
    probeLlamaCpp(http, root, modelId),
  ]);
  let best: Candidate | undefined;
  // The first of equal confidence wins: LM Studio, then Ollama, then llama.cpp.
  for (const candidate of answers.flat()) if (!best || candidate.confidence > best.confidence) best = candidate;
  if (!best) return undefined;
  const { confidence: _confidence, ...window } = best;
  return window;
}

// LM Studio ------------------------------------------------------------------------------------

const LM_STUDIO_V0_MODEL = lazily(() =>
  z.looseObject({
    id: z.string(),
    state: TEXT(),
    max_context_length: TOKENS(),
    /** Not in LM Studio's documentation, but what its servers answer for a loaded model. */
    loaded_context_length: TOKENS(),
  }),
);

/**
 * LM Studio's REST API v0 (0.3.6 and later; deprecated in 0.4 in favour of v1): `state` is "loaded"
 * or "not-loaded". A model that is not loaded advertises only its maximum; loading it just in time
 * uses its saved load settings, often a smaller context, so that answer ranks low.
 */
async function probeLmStudioV0(http: JsonClient, root: string, modelId: string): Promise<Candidate[]> {
  const answer = await http.get(`${root}/api/v0/models`);
  const entry =
    'json' in answer
      ? findEntry(
          MODEL_LIST(),
          answer.json,
          (list) => list.data,
          LM_STUDIO_V0_MODEL(),
          (m) => m.id === modelId,
        )
      : undefined;
  if (!entry) return [];
  if (entry.state === 'loaded' && entry.loaded_context_length !== undefined) {
    return [lmStudio(entry.loaded_context_length, "LM Studio's loaded context (/api/v0/models)", Confidence.Loaded)];
  }
  if (entry.max_context_length !== undefined) {
    return [lmStudio(entry.max_context_length, "LM Studio's model list (max_context_length)", Confidence.Advertised)];
  }
  return [];
}

const LM_STUDIO_V1_LIST = lazily(() => z.looseObject({ models: z.array(z.unknown()) }));
const LM_STUDIO_V1_MODEL = lazily(() =>
  z.looseObject({
    key: z.string(),
    max_context_length: TOKENS(),
    loaded_instances: z
      .array(z.looseObject({ id: TEXT(), config: z.looseObject({ context_length: TOKENS() }).optional().catch(undefined) }))
      .optional()
      .catch(undefined),
  }),
);

/**
 * LM Studio's REST API v1 (0.4 and later): a model's `key`, and each loaded instance's `id` (the
 * name requests use when a model is loaded more than once) with its `config.context_length`.
 */
async function probeLmStudioV1(http: JsonClient, root: string, modelId: string): Promise<Candidate[]> {
  const answer = await http.get(`${root}/api/v1/models`);
  if (!('json' in answer)) return [];
  const matches = (m: z.infer<ReturnType<typeof LM_STUDIO_V1_MODEL>>): boolean =>
    m.key === modelId || (m.loaded_instances ?? []).some((i) => i.id === modelId);
  const entry = findEntry(LM_STUDIO_V1_LIST(), answer.json, (list) => list.models, LM_STUDIO_V1_MODEL(), matches);
  if (!entry) return [];
  const instances = entry.loaded_instances ?? [];
  const instance = instances.find((i) => i.id === modelId) ?? instances[0];
  const loaded = instance?.config?.context_length;
  if (loaded !== undefined) return [lmStudio(loaded, "LM Studio's loaded context (/api/v1/models)", Confidence.Loaded)];
  if (entry.max_context_length !== undefined) {
    return [lmStudio(entry.max_context_length, "LM Studio's model list (max_context_length)", Confidence.Advertised)];
  }
  return [];
}

function lmStudio(limit: number, origin: string, confidence: Confidence): Candidate {
  return { limit, server: 'lmstudio', origin, confidence };
}

// Ollama ---------------------------------------------------------------------------------------

const OLLAMA_PS = lazily(() =>
  z.looseObject({
    models: z.array(
      z.looseObject({
        name: TEXT(),
        model: TEXT(),
        /** Since Ollama 0.9.7: the context the loaded runner was started with. */
        context_length: TOKENS(),
      }),
    ),
  }),
);

const OLLAMA_SHOW = lazily(() =>
  z.looseObject({
    /** The Modelfile's PARAMETER lines, one `name value` pair a line, e.g. `num_ctx    8192`. */
    parameters: TEXT(),
    /** GGUF metadata; `<architecture>.context_length` is the TRAINED length, not what Ollama runs with. */
    model_info: z.record(z.string(), z.unknown()).optional().catch(undefined),
    /** Set on cloud models, which Ollama forwards to its cloud service. */
    remote_model: TEXT(),
  }),
);

const OLLAMA_VERSION = lazily(() => z.looseObject({ version: z.string() }));

/**
 * Ollama, from most to least telling:
 * - `GET /api/ps`: a loaded model's `context_length`. A model loaded by another client with its own
 *   `num_ctx` is reloaded with ours on our first request, so this can be stale until then.
 * - `POST /api/show`: `num_ctx` among the model's parameters, which every request without its own
 *   `num_ctx` (all OpenAI-compatible ones) gets. Ollama caps it at the trained length, and so do we.
 * - Cloud models run at their full length ("Cloud models are set to their maximum context length by
 *   default", Ollama's context-length docs), which /api/show states in `model_info`.
 * - Otherwise Ollama's default, when /api/ps or /api/version shows the server is Ollama.
 */
async function probeOllama(http: JsonClient, root: string, modelId: string): Promise<Candidate[]> {
  const [ps, show, version] = await Promise.all([
    http.get(`${root}/api/ps`),
    // `model` since Ollama 0.1.4x; older servers read `name`, newer ones still accept it.
    http.post(`${root}/api/show`, { model: modelId, name: modelId }),
    http.get(`${root}/api/version`),
  ]);
  const psList = 'json' in ps ? OLLAMA_PS().safeParse(ps.json) : undefined;
  const shown = 'json' in show ? OLLAMA_SHOW().safeParse(show.json) : undefined;
  const versionInfo = 'json' in version ? OLLAMA_VERSION().safeParse(version.json) : undefined;
  const candidates: Candidate[] = [];

  const wanted = ollamaName(modelId);
  const loaded = psList?.success
    ? psList.data.models.find((m) => [m.name, m.model].some((n) => n !== undefined && ollamaName(n) === wanted))
    : undefined;
  if (loaded?.context_length !== undefined) {
    candidates.push(ollama(loaded.context_length, "Ollama's loaded model (/api/ps)", Confidence.Loaded));
  }

  const details = shown?.success ? shown.data : undefined;
  const trained = details ? trainedLength(details.model_info) : undefined;
  const numCtx = details?.parameters !== undefined ? parameter(details.parameters, 'num_ctx') : undefined;
  if (numCtx !== undefined) {
    candidates.push(capped(numCtx, trained, "Ollama's model parameters (num_ctx)", Confidence.Configured));
  } else if (details?.remote_model !== undefined && trained !== undefined) {
    candidates.push(ollama(trained, "Ollama's cloud model (model_info context_length)", Confidence.Configured));
  }

  const isOllama = psList?.success === true || versionInfo?.success === true;
  if (isOllama && details?.remote_model === undefined) {
    const version = versionInfo?.success ? versionInfo.data.version : undefined;
    candidates.push(capped(ollamaDefaultContext(version), trained, "Ollama's default context", Confidence.Default));
  }
  return candidates;
}

/**
 * The context Ollama gives a model with no `num_ctx` of its own:
 * - 2048 up to 0.6.6;
 * - 4096 from 0.6.7 (commit "config: update default context length to 4096", April 2025);
 * - from 0.15.5 (commit "server: use tiered VRAM-based default context length", January 2026):
 *   4096 below 24 GiB of VRAM, 32768 up to 48 GiB, 262144 above.
 * The VRAM is not visible from outside, nor is `OLLAMA_CONTEXT_LENGTH`, which overrides all of
 * these, so anything from 0.6.7 on (and a version that cannot be read, or a dev build's 0.0.0) is
 * taken as 4096: too small a guess only compacts early, too large a one lets Ollama silently drop
 * the start of the conversation.
 */
function ollamaDefaultContext(version: string | undefined): number {
  const parts = version?.match(/^v?(\d+)\.(\d+)\.(\d+)/);
  if (!parts) return 4096;
  const [major, minor, patch] = parts.slice(1).map(Number) as [number, number, number];
  if (major === 0 && minor === 0 && patch === 0) return 4096;
  const before067 = major === 0 && (minor < 6 || (minor === 6 && patch < 7));
  return before067 ? 2048 : 4096;
}

/** Ollama caps a context above the model's trained length at that length (llm/server.go). */
function capped(limit: number, trained: number | undefined, origin: string, confidence: Confidence): Candidate {
  if (trained !== undefined && limit > trained) return ollama(trained, `${origin}, capped at the trained length`, confidence);
  return ollama(limit, origin, confidence);
}

function ollama(limit: number, origin: string, confidence: Confidence): Candidate {
  return { limit, server: 'ollama', origin, confidence };
}

/** `model_info["<general.architecture>.context_length"]`. */
function trainedLength(modelInfo: Record<string, unknown> | undefined): number | undefined {
  const architecture = modelInfo?.['general.architecture'];
  if (typeof architecture !== 'string') return undefined;
  return positiveInteger(modelInfo?.[`${architecture}.context_length`]);
}

/** A numeric parameter of /api/show's text, e.g. `num_ctx                        8192`. */
function parameter(text: string, name: string): number | undefined {
  const match = text.match(new RegExp(`^\\s*${name}\\s+(\\d+)(?:\\.0+)?\\s*$`, 'm'));
  return match ? positiveInteger(Number(match[1])) : undefined;
}

/**
 * A model name as Ollama compares them: the default `library/` namespace dropped (as /api/ps shows
 * names) and the implicit `:latest` tag made explicit, so `llama3.2` finds `llama3.2:latest`.
 */
function ollamaName(name: string): string {
  let n = name
    .trim()
    .toLowerCase()
    .replace(/^library\//, '');
  if (!n.slice(n.lastIndexOf('/') + 1).includes(':')) n += ':latest';
  return n;
}

// llama.cpp ------------------------------------------------------------------------------------

const LLAMA_CPP_PROPS = lazily(() =>
  z.looseObject({
    /** `n_ctx` here is per slot: the total `--ctx-size` divided among `--parallel` slots. */
    default_generation_settings: z.looseObject({ n_ctx: TOKENS() }),
  }),
);

/**
 * llama.cpp's server: `GET /props`. In router mode (several models) a bare /props answers a dummy
 * with `n_ctx: 0`, and the model's own needs `?model=`; `autoload=false` keeps the question from
 * loading a model. A single-model server ignores both parameters.
 */
async function probeLlamaCpp(http: JsonClient, root: string, modelId: string): Promise<Candidate[]> {
  const answer = await http.get(`${root}/props?model=${encodeURIComponent(modelId)}&autoload=false`);
  if (!('json' in answer)) return [];
  const props = LLAMA_CPP_PROPS().safeParse(answer.json);
  const limit = props.success ? props.data.default_generation_settings.n_ctx : undefined;
  if (limit === undefined) return [];
  return [{ limit, server: 'llamacpp', origin: "llama.cpp's /props (n_ctx)", confidence: Confidence.Loaded }];
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

type Answer = { readonly json: unknown } | { readonly failure: 'timeout' | 'aborted' | 'unusable' };

/** JSON over HTTP with a timeout on every request, answering instead of throwing. */
class JsonClient {
  private readonly fetchImpl: typeof fetch;
  private readonly timeoutMs: number;
  private readonly origin: string;

  constructor(private readonly options: DiscoveryOptions) {
    this.fetchImpl = options.fetch ?? fetch;
    const timeout = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.timeoutMs = Number.isFinite(timeout) && timeout > 0 ? timeout : DEFAULT_TIMEOUT_MS;
    this.origin = originOf(options.baseUrl);
  }

  get(url: string): Promise<Answer> {
    return this.request(url, 'GET');
  }

  post(url: string, body: unknown): Promise<Answer> {
    return this.request(url, 'POST', JSON.stringify(body));
  }

  private async request(url: string, method: string, body?: string): Promise<Answer> {
    const timeout = new AbortController();
    const timer = setTimeout(() => timeout.abort(), this.timeoutMs);
    const signal = this.options.signal ? AbortSignal.any([timeout.signal, this.options.signal]) : timeout.signal;
    const abandoned = new Promise<Answer>((resolve) => {
      const settle = (): void => resolve({ failure: timeout.signal.aborted ? 'timeout' : 'aborted' });
      if (signal.aborted) settle();
      else signal.addEventListener('abort', settle, { once: true });
    });
    try {
      const exchange = this.exchange(url, method, body, signal).then(
        (json): Answer => ({ json }),
        (): Answer => ({ failure: signal.aborted ? (timeout.signal.aborted ? 'timeout' : 'aborted') : 'unusable' }),
      );
      // Racing the abort too means a fetch that ignores its signal still cannot hold us up.
      return await Promise.race([exchange, abandoned]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** The parsed body of a 2xx JSON answer; throws on anything else. */
  private async exchange(url: string, method: string, body: string | undefined, signal: AbortSignal): Promise<unknown> {
    const headers: Record<string, string> = { Accept: 'application/json' };
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const withKey = Boolean(this.options.apiKey) && this.origin !== '' && originOf(url) === this.origin;
    Object.assign(headers, authHeaders(this.options.provider ?? DEFAULT_PROVIDER_KIND, withKey ? this.options.apiKey : undefined));
    const response = await this.fetchImpl(url, {
      method,
      headers,
      signal,
      ...(body !== undefined ? { body } : {}),
      // A redirect could carry the key elsewhere; an answer that redirects is simply no answer.
      ...(withKey ? { redirect: 'manual' as const } : {}),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => undefined);
      throw new Error(`HTTP ${response.status}`);
    }
    return JSON.parse(await response.text()) as unknown;
  }
}

// ---------------------------------------------------------------------------------------------
// Small helpers
// ---------------------------------------------------------------------------------------------

/** The entry of a list-shaped payload that `matches`, each entry checked on its own. */
function findEntry<L, E>(
  listSchema: z.ZodType<L>,
  json: unknown,
  entriesOf: (list: L) => unknown[],
  entrySchema: z.ZodType<E>,
  matches: (entry: E) => boolean,
): E | undefined {
  const list = listSchema.safeParse(json);
  if (!list.success) return undefined;
  for (const raw of entriesOf(list.data)) {
    const entry = entrySchema.safeParse(raw);
    if (entry.success && matches(entry.data)) return entry.data;
  }
  return undefined;
}

function positiveInteger(value: unknown): number | undefined {
  return typeof value === 'number' && Number.isSafeInteger(value) && value > 0 ? value : undefined;
}

/** The server's root: the base URL without trailing slashes and without its trailing `/v1`. */
function apiRoot(baseUrl: string): string {
  return trimSlash(baseUrl).replace(/\/v1$/, '').replace(/\/+$/, '');
}

function trimSlash(url: string): string {
  return url.trim().replace(/\/+$/, '');
}

function originOf(url: string): string {
  try {
    return new URL(url.trim()).origin;
  } catch {
    return '';
  }
}

function hostOf(url: string): string {
  try {
    return new URL(url.trim()).hostname;
  } catch {
    return '';
  }
}
