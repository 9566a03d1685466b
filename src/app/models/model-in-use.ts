import type { ContextWindow } from '../../core/context-window';
import type { MessageTokenCounter } from '../../core/message-tokens';
import type { ModelContext } from '../conversation/conversation';
import type { WindowInfo } from './model-windows';

/** A model's window as `windowFor` sizes it: the whole window, the room kept for the answer, and what the conversation may fill. */
export interface SizedWindow {
  readonly window: WindowInfo;
  readonly outputReserve: number;
  readonly inputLimit: number;
}

/** The model in use, as the session knows it: undefined when none is selected. */
export interface ModelInUse {
  /** Its name, as the chat shows it. */
  readonly name: string;
  /** The key its learned window and calibration are kept under (its vendor and id). */
  readonly key: string;
  /** Its window, when known. */
  readonly sized: SizedWindow | undefined;
}

/**
 * What a conversation needs to know of `model`: its window (what the conversation may fill, or why
 * it is unknown), its counter, what every request carries besides the messages, and the answer's room.
 */
export function modelContextOf(model: ModelInUse | undefined, counter: MessageTokenCounter, requestOverhead: number): ModelContext {
  const sized = model?.sized;
  const name = model?.name ?? 'no model';
  const window: ContextWindow = sized
    ? { limit: sized.inputLimit, source: sized.window.assumed ? 'assumed' : 'model' }
    : {
        limit: 0,
        source: 'unknown',
        reason: model
          ? `the context window of "${name}" is unknown: the model reports none; set longrun.contextWindow to enable automatic compaction`
          : 'no model is selected, so the context window is unknown',
      };
  return {
    name,
    window,
    counter,
    requestOverhead,
    outputReserve: sized?.outputReserve ?? 0,
    ...(model ? { key: model.key } : {}),
    ...(sized ? { whole: sized.window } : {}),
  };
}

/** The server an endpoint runs on, as far as it says how to give a model a larger context. */
export type LocalServer = 'ollama' | 'lmstudio' | 'llamacpp';

/** The server behind a base URL by its usual port (Ollama's 11434, LM Studio's 1234), when nothing better is known. */
export function guessServer(baseUrl: string): LocalServer | undefined {
  try {
    const port = new URL(baseUrl).port;
    return port === '11434' ? 'ollama' : port === '1234' ? 'lmstudio' : undefined;
  } catch {
    return undefined;
  }
}

/**
 * How to give model `modelId` a larger context on the server it runs on, for the notice of a prompt
 * the server cut: `contextWindow` is the context it runs with now.
 */
export function truncationAdvice(server: string | undefined, modelId: string, contextWindow: number): string {
  switch (server) {
    case 'ollama':
      return `Ollama runs ${modelId} with a ${contextWindow.toLocaleString('en-US')}-token context and drops the start of longer prompts. Raise it: start Ollama with OLLAMA_CONTEXT_LENGTH=16384 (or more), or create a model with "PARAMETER num_ctx 16384" in its Modelfile; then set "contextWindow" for it in longrun.endpoints.`;
    case 'lmstudio':
      return `Raise the model's context length in LM Studio's load settings and reload ${modelId}.`;
    case 'llamacpp':
      return 'Start llama-server with a larger --ctx-size (-c).';
    default:
      return `If you know the model's real window, set "contextWindow" for ${modelId} in longrun.endpoints.`;
  }
}
