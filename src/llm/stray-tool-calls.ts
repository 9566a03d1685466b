import { ToolChoiceViolationError } from 'ai';

/**
 * Tool calls a model made where it was told to make none (`tool_choice: "none"`). A server that does
 * not read the field returns them as calls (Ollama's OpenAI layer), which the AI SDK reports by
 * throwing `ToolChoiceViolationError`. A server that honours it only by not parsing calls (llama.cpp's
 * server; vLLM, which keeps the tools in the prompt unless told otherwise) leaves the model's call
 * syntax in the text instead.
 */

/** The tools called, by name, when `error` is the AI SDK's report of calls made under `tool_choice: "none"`. */
export function toolsCalledDespite(error: unknown): string[] | undefined {
  if (!ToolChoiceViolationError.isInstance(error) || error.toolChoice.type !== 'none') return undefined;
  const names = error.content.flatMap((part) => (part.type === 'tool-call' ? [part.toolName] : []));
  return names.length > 0 ? names : [UNNAMED];
}

/** What a call is named when the syntax holds no tool that was offered. */
const UNNAMED = '(a tool)';

/** How models open a call written as text: Hermes and Qwen, Mistral, Llama 3.1, DeepSeek, Kimi and others. */
const CALL_OPENERS = [
  '<tool_call>',
  '<tool_calls>',
  '<|tool_call|>',
  '<|tool_calls_section_begin|>',
  '[TOOL_CALLS]',
  '<function=',
  '<function_calls>',
  '<|python_tag|>',
  '<｜tool▁calls▁begin｜>',
];

/**
 * The tools a text calls when the text is a tool call written out (it opens with one of the call
 * syntaxes models use, or is a JSON call `{"name": "read_file", …}` of an offered tool); empty when
 * it is anything else, a summary that quotes a call further down included.
 */
export function toolCallsInText(text: string, offered: readonly string[]): string[] {
  const trimmed = text.replace(/^\s*<think>[\s\S]*?<\/think>/, '').trim();
  if (CALL_OPENERS.some((opener) => trimmed.startsWith(opener))) {
    const named = offered.filter((name) => new RegExp(`(?<![\\w.-])${escapeRegExp(name)}(?![\\w.-])`).test(trimmed));
    return named.length > 0 ? named : [UNNAMED];
  }
  if (!/^\[?\s*\{/.test(trimmed)) return [];
  const named = [...trimmed.matchAll(/"name"\s*:\s*"([^"]+)"/g)].map((match) => match[1]!).filter((name) => offered.includes(name));
  return [...new Set(named)];
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
