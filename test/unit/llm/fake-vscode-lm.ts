import type { VsCodeCancellationToken, VsCodeChatModel, VsCodeChatRequestOptions, VsCodeLmApi } from '../../../src/llm/vscode-lm-bridge';

/**
 * A stand-in for a model VS Code offers (`vscode.LanguageModelChat`) and the pieces of the `vscode`
 * module the bridge needs, shaped like the real ones: each request is answered by the next script.
 */

// Stand-ins for the vscode module's classes, shaped like the real ones.
export class TextPart {
  constructor(readonly value: string) {}
}
export class ToolCallPart {
  constructor(
    readonly callId: string,
    readonly name: string,
    readonly input: object,
  ) {}
}
export class ToolResultPart {
  constructor(
    readonly callId: string,
    readonly content: unknown[],
  ) {}
}
export class ChatMessage {
  constructor(
    readonly role: 'user' | 'assistant',
    readonly content: unknown[],
  ) {}
  static User(content: string | unknown[]): ChatMessage {
    return new ChatMessage('user', typeof content === 'string' ? [new TextPart(content)] : content);
  }
  static Assistant(content: string | unknown[]): ChatMessage {
    return new ChatMessage('assistant', typeof content === 'string' ? [new TextPart(content)] : content);
  }
}

export const api: VsCodeLmApi = {
  LanguageModelChatMessage: ChatMessage,
  LanguageModelTextPart: TextPart,
  LanguageModelToolCallPart: ToolCallPart,
  LanguageModelToolResultPart: ToolResultPart,
  LanguageModelChatToolMode: { Auto: 1, Required: 2 },
};

export interface RecordedRequest {
  messages: ChatMessage[];
  options: VsCodeChatRequestOptions;
  token: VsCodeCancellationToken;
}

export type Script = (token: VsCodeCancellationToken) => AsyncIterable<unknown>;

/** One token per four characters of text, the way a simple tokenizer would count. */
export function fakeCount(value: unknown): number {
  if (typeof value === 'string') return Math.ceil(value.length / 4);
  if (value instanceof ChatMessage) return value.content.reduce<number>((sum, part) => sum + fakeCount(JSON.stringify(part)), 0);
  return 0;
}

/** A chat model that answers each request with the next script and records what it was sent. */
export class FakeChatModel implements VsCodeChatModel {
  readonly id = 'copilot-gpt-4o';
  readonly vendor = 'copilot';
  readonly family = 'gpt-4o';
  readonly name = 'GPT-4o';
  readonly maxInputTokens = 64_000;
  readonly requests: RecordedRequest[] = [];
  readonly counted: unknown[] = [];
  sendError: unknown;

  constructor(private readonly scripts: Script[]) {}

  async sendRequest(messages: unknown[], options: VsCodeChatRequestOptions, token: VsCodeCancellationToken) {
    this.requests.push({ messages: messages as ChatMessage[], options, token });
    if (this.sendError !== undefined) throw this.sendError;
    const script = this.scripts[this.requests.length - 1];
    if (!script) throw new Error(`no script for request ${this.requests.length}`);
    const stream = script(token);
    return {
      stream,
      text: (async function* () {
        for await (const item of stream) if (item instanceof TextPart) yield item.value;
      })(),
    };
  }

  async countTokens(text: unknown): Promise<number> {
    this.counted.push(text);
    return fakeCount(text);
  }
}

export const items = (...values: unknown[]): Script =>
  async function* () {
    for (const value of values) yield value;
  };
