/**
 * llama.cpp's `llama-server` answers, word for word (build 11434), for scripts that make the
 * scripted model answer as it does: a tool call its chat format's parser cannot read, and a prompt
 * over its window.
 */
import type { ErrorStep } from './scenarios';

/**
 * The model wrote a tool call that does not parse in the chat format of its template (`Hermes 2 Pro`,
 * `Generic`, …): llama-server answers 500, as for any error of its own.
 */
export function unparsedToolCall(format = 'Hermes 2 Pro'): ErrorStep {
  return {
    status: 500,
    body: { error: { code: 500, message: `The model produced output that does not match the expected ${format} format`, type: 'server_error' } },
  };
}

/** The prompt does not fit the slot's context (`-c`); the server states both numbers. */
export function exceedsContextSize(promptTokens: number, contextSize: number): ErrorStep {
  return {
    status: 400,
    body: {
      error: {
        code: 400,
        message: `request (${promptTokens} tokens) exceeds the available context size (${contextSize} tokens), try increasing it`,
        type: 'exceed_context_size_error',
        n_prompt_tokens: promptTokens,
        n_ctx: contextSize,
      },
    },
  };
}
