import assert from 'node:assert/strict';
import { chatPosition } from '../../../src/app/turn/chat-history';

/** What a VS Code chat's history says about the conversation and the turn a request continues. */

describe("where a chat stands, by VS Code's history", () => {
  const request = (prompt: string) => ({ prompt, participant: 'longrun.agent', references: [], toolReferences: [] });
  const response = (metadata: unknown, participant = 'longrun.agent') => ({ participant, response: [], result: { metadata } });

  it('names the conversation and the turns its responses answered, in order', () => {
    const history = [
      request('a'),
      response({ conversationId: 'c1', turnId: 't1' }),
      request('b'),
      response({ conversationId: 'c1', turnId: 't2' }),
      request('/context'),
      response({ conversationId: 'c1', turnId: 't2', command: 'context' }),
    ];
    assert.deepEqual(chatPosition(history, 'longrun.agent'), { empty: false, answered: true, conversationId: 'c1', turns: ['t1', 't2'] });
  });

  it('follows the conversation of the latest response after /new, and ignores other participants', () => {
    const history = [
      request('a'),
      response({ conversationId: 'c1', turnId: 't1' }),
      response({ conversationId: 'x', turnId: 'y' }, 'someone.else'),
      request('/new'),
      response({ conversationId: 'c2', command: 'new' }),
    ];
    assert.deepEqual(chatPosition(history, 'longrun.agent'), { empty: false, answered: true, conversationId: 'c2', turns: [] });
  });

  it('reads a chat of an older Longrun (no turns) and a chat Longrun never answered', () => {
    assert.deepEqual(chatPosition([request('a'), response({ conversationId: 'c1' })], 'longrun.agent').turns, []);
    assert.deepEqual(chatPosition([response({}, 'other')], 'longrun.agent'), { empty: false, answered: false, turns: [] });
    assert.deepEqual(chatPosition([], 'longrun.agent'), { empty: true, answered: false, turns: [] });
    assert.equal(chatPosition([null, 3, response('not an object')], 'longrun.agent').conversationId, undefined);
  });
});

describe('which conversation a chat continues', () => {
  const response = (participant: string, metadata: unknown) => ({ participant, result: { metadata } });
  it('takes the id of the latest Longrun response of that chat', () => {
    const history = [
      { prompt: 'hi', participant: 'longrun.agent' },
      response('longrun.agent', { conversationId: 'a' }),
      response('other.participant', { conversationId: 'x' }),
      response('longrun.agent', { conversationId: 'b' }),
    ];
    assert.equal(chatPosition(history, 'longrun.agent').conversationId, 'b');
  });
  it('finds none in a new chat, or one whose responses carry no id', () => {
    assert.equal(chatPosition([], 'longrun.agent').conversationId, undefined);
    assert.equal(
      chatPosition(
        [response('longrun.agent', {}), response('longrun.agent', undefined), response('longrun.agent', { conversationId: 7 })],
        'longrun.agent',
      ).conversationId,
      undefined,
    );
  });
});
