import type { ModelMessage } from 'ai';
import * as vscode from 'vscode';
import { tableLimit } from '../core/context-window';
import { loadTokenizer, encodingForModel } from '../core/tokenizer';
import { streamEndpointChat } from '../llm/endpoint-chat';
import { createEndpointModel } from '../llm/openai-endpoint';
import type { ApiKeys } from './api-keys';
import type { EndpointSetting } from './settings';

/**
 * Longrun's own models (vendor `longrun`): every model of every OpenAI-compatible endpoint in
 * `longrun.endpoints`, offered in VS Code's model picker. This is what makes chat work in VS Code
 * builds without Copilot. Requests are served through the AI SDK.
 */

export const VENDOR = 'longrun';
const DEFAULT_WINDOW = 32_768;
const DEFAULT_MAX_OUTPUT = 4_096;

export interface ResolvedEndpointModel {
  readonly endpoint: EndpointSetting;
  readonly model: EndpointSetting['models'][number];
  /** `endpoint/model`, the id VS Code knows the model by. */
  readonly id: string;
  readonly contextWindow: number;
  readonly maxOutputTokens: number;
}

export function endpointModels(endpoints: readonly EndpointSetting[]): ResolvedEndpointModel[] {
  const out: ResolvedEndpointModel[] = [];
  for (const endpoint of endpoints) {
    for (const model of endpoint.models) {
      out.push({
        endpoint,
        model,
        id: `${endpoint.name}/${model.id}`,
        contextWindow: model.contextWindow ?? tableLimit(model.id) ?? DEFAULT_WINDOW,
        maxOutputTokens: model.maxOutputTokens ?? DEFAULT_MAX_OUTPUT,
      });
    }
  }
  return out;
}

export class LongrunModelProvider implements vscode.LanguageModelChatProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeLanguageModelChatInformation = this.changed.event;

  constructor(
    private readonly endpoints: () => readonly EndpointSetting[],
    private readonly keys: ApiKeys,
    private readonly log: vscode.LogOutputChannel,
  ) {}

  /** Tells VS Code the list of models may have changed (settings or keys changed). */
  refresh(): void {
    this.changed.fire();
  }

  find(id: string): ResolvedEndpointModel | undefined {
    return endpointModels(this.endpoints()).find((m) => m.id === id);
  }

  provideLanguageModelChatInformation(): vscode.LanguageModelChatInformation[] {
    return endpointModels(this.endpoints()).map((m) => ({
      id: m.id,
      name: m.model.name ?? m.model.id,
      family: m.model.id,
      version: '1',
      detail: m.endpoint.name,
      tooltip: `${m.model.id} at ${m.endpoint.baseUrl} (${m.contextWindow.toLocaleString('en-US')}-token window)`,
      maxInputTokens: Math.max(1, m.contextWindow - m.maxOutputTokens),
      maxOutputTokens: m.maxOutputTokens,
      capabilities: { toolCalling: m.model.toolCalling ?? true, imageInput: false },
    }));
  }

  async provideLanguageModelChatResponse(
    info: vscode.LanguageModelChatInformation,
    messages: readonly vscode.LanguageModelChatRequestMessage[],
    options: vscode.ProvideLanguageModelChatResponseOptions,
    progress: vscode.Progress<vscode.LanguageModelResponsePart>,
    token: vscode.CancellationToken,
  ): Promise<void> {
    const resolved = this.find(info.id);
    if (!resolved) throw new Error(`Longrun has no model "${info.id}". Check the longrun.endpoints setting.`);
    const model = createEndpointModel(
      { endpoint: resolved.endpoint.name, baseUrl: resolved.endpoint.baseUrl, id: resolved.model.id, contextWindow: resolved.contextWindow, maxOutputTokens: resolved.maxOutputTokens },
      await this.keys.get(resolved.endpoint.name),
    );
    const controller = new AbortController();
    const subscription = token.onCancellationRequested(() => controller.abort());
    try {
      await streamEndpointChat({
        model,
        messages: toModelMessages(messages),
        tools: (options.tools ?? []).map((t) => ({ name: t.name, description: t.description, ...(t.inputSchema ? { inputSchema: t.inputSchema } : {}) })),
        toolMode: options.toolMode === vscode.LanguageModelChatToolMode.Required ? 'required' : 'auto',
        maxOutputTokens: resolved.maxOutputTokens,
        signal: controller.signal,
        onText: (delta) => progress.report(new vscode.LanguageModelTextPart(delta)),
        onToolCall: (call) => progress.report(new vscode.LanguageModelToolCallPart(call.toolCallId, call.toolName, (call.input ?? {}) as object)),
      });
    } catch (error) {
      if (!controller.signal.aborted) this.log.warn(`Request to ${resolved.id} failed: ${error instanceof Error ? error.message : String(error)}`);
      throw error;
    } finally {
      subscription.dispose();
    }
  }

  async provideTokenCount(
    info: vscode.LanguageModelChatInformation,
    text: string | vscode.LanguageModelChatRequestMessage,
  ): Promise<number> {
    const tokenizer = await loadTokenizer(encodingForModel(info.family));
    if (typeof text === 'string') return tokenizer.count(text);
    let total = 4;
    for (const part of text.content) {
      if (part instanceof vscode.LanguageModelTextPart) total += tokenizer.count(part.value);
      else if (part instanceof vscode.LanguageModelToolCallPart) total += tokenizer.count(part.name) + tokenizer.count(JSON.stringify(part.input));
      else if (part instanceof vscode.LanguageModelToolResultPart) total += tokenizer.count(resultText(part));
    }
    return total;
  }
}

function resultText(part: vscode.LanguageModelToolResultPart): string {
  return part.content.map((c) => (c instanceof vscode.LanguageModelTextPart ? c.value : typeof c === 'string' ? c : JSON.stringify(c))).join('');
}

/** VS Code chat messages to AI SDK messages: text, tool calls and tool results keep their pairing. */
export function toModelMessages(messages: readonly vscode.LanguageModelChatRequestMessage[]): ModelMessage[] {
  const out: ModelMessage[] = [];
  const toolNames = new Map<string, string>();
  for (const message of messages) {
    const texts: string[] = [];
    const calls: { type: 'tool-call'; toolCallId: string; toolName: string; input: unknown }[] = [];
    const results: { type: 'tool-result'; toolCallId: string; toolName: string; output: { type: 'text'; value: string } }[] = [];
    for (const part of message.content) {
      if (part instanceof vscode.LanguageModelTextPart) texts.push(part.value);
      else if (part instanceof vscode.LanguageModelToolCallPart) {
        toolNames.set(part.callId, part.name);
        calls.push({ type: 'tool-call', toolCallId: part.callId, toolName: part.name, input: part.input });
      } else if (part instanceof vscode.LanguageModelToolResultPart) {
        results.push({ type: 'tool-result', toolCallId: part.callId, toolName: toolNames.get(part.callId) ?? 'tool', output: { type: 'text', value: resultText(part) } });
      }
    }
    const text = texts.join('');
    if (message.role === vscode.LanguageModelChatMessageRole.Assistant) {
      const content = [...(text ? [{ type: 'text' as const, text }] : []), ...calls];
      if (content.length) out.push({ role: 'assistant', content });
    } else {
      if (results.length) out.push({ role: 'tool', content: results });
      if (text) out.push({ role: 'user', content: text });
    }
  }
  return out;
}
