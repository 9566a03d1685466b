import type { ModelMessage } from 'ai';
import * as vscode from 'vscode';
import { encodingForModel, loadTokenizerOrEstimate } from '../core/tokenizer';
import { streamEndpointChat } from '../llm/endpoint-chat';
import { createEndpointModel, type EndpointModel } from '../llm/openai-endpoint';
import { DEFAULT_PROVIDER_KIND, type ProviderKind } from '../core/provider-kind';
import type { ApiKeys } from './api-keys';
import type { ListedModels } from '../app/models/listed-models';
import type { ModelWindows, WindowInfo } from '../app/models/model-windows';
import type { EndpointSetting } from '../app/settings';
import { errorText } from '../core/errors';
import { VENDOR } from '../app/contributions';

/**
 * Longrun's own models (vendor `longrun`): every model of every endpoint in `longrun.endpoints`
 * (OpenAI-compatible servers and native providers), offered in VS Code's model picker; an endpoint
 * that names no models offers those its server lists. This is what
 * makes chat work in VS Code builds without Copilot. Requests are served through the AI SDK.
 */

export interface ResolvedEndpointModel {
  readonly endpoint: EndpointSetting;
  readonly model: EndpointSetting['models'][number];
  /** The wire format of its endpoint, the default filled in. */
  readonly provider: ProviderKind;
  /** `endpoint/model`, the id VS Code knows the model by. */
  readonly id: string;
  /** The whole window (input and output), and where it came from. */
  readonly window: WindowInfo;
  /** The window's size in tokens. */
  readonly contextWindow: number;
  /** Tokens kept for the answer, sent as `max_tokens`: the model's maximum, at most 25% of the window. */
  readonly maxOutputTokens: number;
  /** What the conversation may fill: the window less the output reserve. */
  readonly inputLimit: number;
}

/**
 * Every model of `endpoints`: those each names, or for one that names none, those its server listed
 * (`listed`; none until it answers).
 */
export function endpointModels(
  endpoints: readonly EndpointSetting[],
  windows: ModelWindows,
  listed?: Pick<ListedModels, 'idsOf'>,
): ResolvedEndpointModel[] {
  const out: ResolvedEndpointModel[] = [];
  for (const endpoint of endpoints) {
    const models = endpoint.models.length > 0 ? endpoint.models : (listed?.idsOf(endpoint) ?? []).map((id) => ({ id, toolCalling: true }));
    for (const model of models) {
      const id = `${endpoint.name}/${model.id}`;
      const provider = endpoint.provider ?? DEFAULT_PROVIDER_KIND;
      const sized = windows.forEndpointModel({ baseUrl: endpoint.baseUrl, modelId: model.id, endpoint: endpoint.name, provider }, `${VENDOR}/${id}`, {
        ...model,
        provider,
      });
      out.push({
        endpoint,
        model,
        provider,
        id,
        window: sized.window,
        contextWindow: sized.window.limit,
        maxOutputTokens: sized.outputReserve,
        inputLimit: sized.inputLimit,
      });
    }
  }
  return out;
}

/** What the request path is given to make the AI SDK model of `resolved`: its kind included. */
export function toEndpointModel(resolved: ResolvedEndpointModel): EndpointModel {
  return {
    endpoint: resolved.endpoint.name,
    baseUrl: resolved.endpoint.baseUrl,
    provider: resolved.provider,
    id: resolved.model.id,
    contextWindow: resolved.contextWindow,
    maxOutputTokens: resolved.maxOutputTokens,
  };
}

/** What Longrun's model provider is built from. */
export interface ModelProviderDeps {
  readonly endpoints: () => readonly EndpointSetting[];
  readonly keys: ApiKeys;
  readonly log: vscode.LogOutputChannel;
  readonly windows: ModelWindows;
  readonly timeouts: () => { readonly firstChunkMs: number; readonly idleMs: number };
  /** Cleans provider text of the stored API keys; nothing when absent. */
  readonly redact?: (text: string) => string;
  /** The models of endpoints that name none; those endpoints offer nothing without it. */
  readonly listed?: ListedModels;
}

export class LongrunModelProvider implements vscode.LanguageModelChatProvider {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeLanguageModelChatInformation = this.changed.event;

  constructor(private readonly deps: ModelProviderDeps) {
    // A window learned from the server, or the models a server listed, change what VS Code should be told.
    this.deps.windows.onDidChange(() => this.changed.fire());
    this.deps.listed?.onDidChange(() => this.changed.fire());
  }

  /** Tells VS Code the list of models may have changed (settings or keys changed): servers are asked for their lists again. */
  refresh(): void {
    this.deps.listed?.forget();
    this.changed.fire();
  }

  find(id: string): ResolvedEndpointModel | undefined {
    return this.models().find((m) => m.id === id);
  }

  /** Every model offered now; the endpoints that name none are listed in the background. */
  private models(): ResolvedEndpointModel[] {
    const endpoints = this.deps.endpoints();
    this.deps.listed?.ensure(endpoints);
    return endpointModels(endpoints, this.deps.windows, this.deps.listed);
  }

  /** Asks the server of each model for its window, in the background; the list is refreshed when one answers. */
  discoverWindows(models: readonly ResolvedEndpointModel[] = this.models()): void {
    for (const m of models) {
      if (m.model.contextWindow !== undefined) continue;
      void this.deps.windows.ensure({ baseUrl: m.endpoint.baseUrl, modelId: m.model.id, endpoint: m.endpoint.name, provider: m.provider });
    }
  }

  provideLanguageModelChatInformation(): vscode.LanguageModelChatInformation[] {
    const models = this.models();
    this.discoverWindows(models);
    return models.map((m) => ({
      id: m.id,
      name: m.model.name ?? m.model.id,
      family: m.model.id,
      version: '1',
      detail: m.endpoint.name,
      tooltip: `${m.model.id} at ${m.endpoint.baseUrl} (${m.contextWindow.toLocaleString('en-US')}-token window, ${m.window.origin})`,
      maxInputTokens: m.inputLimit,
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
    const model = createEndpointModel(toEndpointModel(resolved), await this.deps.keys.get(resolved.endpoint.name));
    const controller = new AbortController();
    const subscription = token.onCancellationRequested(() => controller.abort());
    try {
      await streamEndpointChat({
        model,
        messages: toModelMessages(messages),
        tools: (options.tools ?? []).map((t) => ({
          name: t.name,
          description: t.description,
          ...(t.inputSchema ? { inputSchema: t.inputSchema } : {}),
        })),
        toolMode: options.toolMode === vscode.LanguageModelChatToolMode.Required ? 'required' : 'auto',
        maxOutputTokens: resolved.maxOutputTokens,
        signal: controller.signal,
        timeouts: this.deps.timeouts(),
        onText: (delta) => progress.report(new vscode.LanguageModelTextPart(delta)),
        onToolCall: (call) => progress.report(new vscode.LanguageModelToolCallPart(call.toolCallId, call.toolName, (call.input ?? {}) as object)),
      });
    } catch (error) {
      if (!controller.signal.aborted) {
        const text = errorText(error);
        this.deps.log.warn(`Request to ${resolved.id} failed: ${this.deps.redact?.(text) ?? text}`);
      }
      throw error;
    } finally {
      subscription.dispose();
    }
  }

  async provideTokenCount(info: vscode.LanguageModelChatInformation, text: string | vscode.LanguageModelChatRequestMessage): Promise<number> {
    const tokenizer = await loadTokenizerOrEstimate(encodingForModel(info.family), (error) =>
      this.deps.log.warn(`Counting with the chars/4 estimate: the tokenizer did not load (${String(error)}).`),
    );
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
        results.push({
          type: 'tool-result',
          toolCallId: part.callId,
          toolName: toolNames.get(part.callId) ?? 'tool',
          output: { type: 'text', value: resultText(part) },
        });
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
