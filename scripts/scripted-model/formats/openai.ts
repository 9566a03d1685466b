/**
 * OpenAI's API as the stand-in serves it: Chat Completions (which OpenAI-compatible servers speak
 * too) and the Responses API under `/v1`, the model list, and OpenAI's error bodies. It asks for no
 * key, as a local server does not.
 */
import type { OpenAICacheState } from '../caching/openai-cache';
import { contextLengthExceeded, defaultErrorBody, invalidRequest } from '../wire';
import type { ListedModel, WireFormat } from './format';
import { chatCompletionsApi, type CacheHolder } from './openai-chat';
import { responsesApi } from './openai-responses';
import type { TokenRule } from '../tokens';

/** What `/v1/models` reports as the owner of every model: nobody should mistake it for a real one. */
export const OWNED_BY = 'longrun-offline-scripted-model';

export function openAIFormat(rule: TokenRule): WireFormat {
  const cache: CacheHolder<OpenAICacheState> = { state: new Map() };
  const chat = chatCompletionsApi(cache, rule);
  const responses = responsesApi(cache, rule);
  const describe = (model: ListedModel, window: number = model.window) => ({
    id: model.id,
    object: 'model',
    created: 0,
    owned_by: OWNED_BY,
    name: model.name ?? `Offline scripted model ${model.id}`,
    ...(model.advertiseWindow ? { context_length: window, max_model_len: window } : {}),
  });
  return {
    name: 'openai',
    root: '/v1',
    route(method, path) {
      if (method === 'GET' && path === '/v1/models') return { kind: 'models' };
      if (method === 'GET' && path.startsWith('/v1/models/')) return { kind: 'model', id: decodeURIComponent(path.slice('/v1/models/'.length)) };
      if (method === 'POST' && path === '/v1/chat/completions') return { kind: 'completion', api: chat };
      if (method === 'POST' && path === '/v1/responses') return { kind: 'completion', api: responses };
      return undefined;
    },
    authorized: () => true,
    refuse: {
      invalid: (message, param = null) => ({ status: 400, body: invalidRequest(message, param) }),
      unauthorized: () => ({ status: 401, body: defaultErrorBody(401) }),
      unknownModel: (model) => ({
        status: 404,
        body: {
          error: {
            message: `The model \`${model}\` does not exist or you do not have access to it.`,
            type: 'invalid_request_error',
            param: null,
            code: 'model_not_found',
          },
        },
      }),
      overflow: (window, promptTokens, maxTokens) => ({ status: 400, body: contextLengthExceeded(window, promptTokens, maxTokens) }),
      status: (status) => ({ status, body: defaultErrorBody(status) }),
    },
    listModels: (models) => ({ object: 'list', data: models.map((model) => describe(model)) }),
    describeModel: (model) => describe(model),
    reset: () => {
      cache.state = new Map();
    },
  };
}
