// Another extension, as far as Longrun can tell: it registers a chat model of its own vendor
// (`longrun-test`), served by the loopback scripted model over HTTP, whose token count is not
// Longrun's (characters / 3), and a tool (`longrun-test_lookup`) that asks for confirmation.
// It exports what it saw, so that the end-to-end suite can compare.
const vscode = require('vscode');

const VENDOR = 'longrun-test';
const MODEL_ID = 'scripted-editor';
/** What the model declares; Longrun's gauge must show this window, not one of its own. */
const MAX_INPUT_TOKENS = 7_000;
const TOOL = 'longrun-test_lookup';

/** This model's tokenizer: a third of the characters, rounded up. */
function countText(text) {
  return Math.ceil(text.length / 3);
}

function partText(part) {
  if (typeof part === 'string') return part;
  if (part && typeof part.value === 'string') return part.value;
  if (part && typeof part.callId === 'string' && typeof part.name === 'string') return part.name + JSON.stringify(part.input ?? {});
  if (part && typeof part.callId === 'string' && Array.isArray(part.content)) return part.content.map(partText).join('');
  return '';
}

function countMessage(message) {
  if (typeof message === 'string') return countText(message);
  return countText((message.content ?? []).map(partText).join(''));
}

/** VS Code's messages as Chat Completions messages. */
function toOpenAi(messages) {
  const out = [];
  for (const message of messages) {
    const texts = [];
    const calls = [];
    const results = [];
    for (const part of message.content) {
      if (part instanceof vscode.LanguageModelTextPart) texts.push(part.value);
      else if (part instanceof vscode.LanguageModelToolCallPart) {
        calls.push({ id: part.callId, type: 'function', function: { name: part.name, arguments: JSON.stringify(part.input ?? {}) } });
      } else if (part instanceof vscode.LanguageModelToolResultPart) {
        results.push({ role: 'tool', tool_call_id: part.callId, content: part.content.map(partText).join('') });
      }
    }
    if (message.role === vscode.LanguageModelChatMessageRole.Assistant) {
      out.push({ role: 'assistant', content: texts.join('') || null, ...(calls.length > 0 ? { tool_calls: calls } : {}) });
    } else {
      out.push(...results);
      if (texts.length > 0) out.push({ role: 'user', content: texts.join('') });
    }
  }
  return out;
}

exports.activate = function activate(context) {
  const seen = { requests: [], invocations: [], counts: 0 };
  const base = process.env.LONGRUN_E2E_MODEL_CONTROL;

  const provider = {
    provideLanguageModelChatInformation() {
      return [
        {
          id: MODEL_ID,
          name: 'Test model of another extension',
          family: 'test-chars3',
          version: '1',
          maxInputTokens: MAX_INPUT_TOKENS,
          maxOutputTokens: 1_000,
          capabilities: { toolCalling: true, imageInput: false },
        },
      ];
    },

    async provideLanguageModelChatResponse(model, messages, options, progress, token) {
      const tools = (options.tools ?? []).map((t) => ({ name: t.name, description: t.description, inputSchema: t.inputSchema }));
      const record = {
        messagesTokens: messages.reduce((sum, m) => sum + countMessage(m), 0),
        toolsTokens: tools.length > 0 ? countText(JSON.stringify(tools)) : 0,
        tools: tools.map((t) => t.name),
        outcome: 'pending',
      };
      seen.requests.push(record);
      const controller = new AbortController();
      const subscription = token.onCancellationRequested(() => controller.abort());
      try {
        const response = await fetch(`${base}/v1/chat/completions`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          signal: controller.signal,
          body: JSON.stringify({
            model: MODEL_ID,
            messages: toOpenAi(messages),
            stream: false,
            ...(tools.length > 0
              ? {
                  tools: tools.map((t) => ({
                    type: 'function',
                    function: { name: t.name, description: t.description, parameters: t.inputSchema ?? { type: 'object', properties: {} } },
                  })),
                  tool_choice: options.toolMode === vscode.LanguageModelChatToolMode.Required ? 'required' : 'auto',
                }
              : {}),
          }),
        });
        const body = await response.json();
        if (!response.ok) throw new Error(body?.error?.message ?? `The scripted model answered ${response.status}.`);
        const message = body.choices[0].message;
        if (message.content) progress.report(new vscode.LanguageModelTextPart(message.content));
        for (const call of message.tool_calls ?? []) {
          progress.report(new vscode.LanguageModelToolCallPart(call.id, call.function.name, JSON.parse(call.function.arguments || '{}')));
        }
        record.outcome = 'answered';
      } catch (error) {
        record.outcome = token.isCancellationRequested ? 'cancelled' : 'failed';
        throw error;
      } finally {
        subscription.dispose();
      }
    },

    async provideTokenCount(model, text) {
      seen.counts++;
      return countMessage(text);
    },
  };
  context.subscriptions.push(vscode.lm.registerLanguageModelChatProvider(VENDOR, provider));

  context.subscriptions.push(
    vscode.lm.registerTool(TOOL, {
      prepareInvocation(options) {
        return {
          invocationMessage: `Looking up "${options.input.query}"`,
          confirmationMessages: { title: 'Look it up in the test index?', message: `Look up "${options.input.query}".` },
        };
      },
      invoke(options) {
        seen.invocations.push(options.input);
        const answer = `Lookup result for "${options.input.query}": LOOKUP-MARKER-42.`;
        const padding = Math.max(0, (options.input.size ?? 0) - answer.length);
        const lines = [answer];
        for (let i = 0; padding > 0 && lines.join('\n').length < options.input.size; i++) lines.push(`padding line ${i} of the lookup result`);
        return new vscode.LanguageModelToolResult([new vscode.LanguageModelTextPart(lines.join('\n'))]);
      },
    }),
  );

  return {
    /** Each chat request the model served: its messages and tool definitions counted by this model, and how it ended. */
    requests: () => seen.requests,
    /** The inputs the tool was invoked with. */
    invocations: () => seen.invocations,
    /** How many times VS Code asked this model to count tokens. */
    counts: () => seen.counts,
    countText,
    maxInputTokens: MAX_INPUT_TOKENS,
  };
};

exports.deactivate = function deactivate() {};
