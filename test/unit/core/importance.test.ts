import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { DEFAULT_CONFIG, type ImportanceConfig } from '../../../src/core/config';
import { scoreGroup, scoreMessage, selectToKeep } from '../../../src/core/importance';
import { text, type Message, type Part, type Role } from '../../../src/core/messages';

const config: ImportanceConfig = DEFAULT_CONFIG.importance;
/** The memo these tests score under. */
const memo = new EngineMemo();

let nextId = 0;
function message(role: Role, ...content: Part[]): Message {
  return { id: `m${nextId++}`, role, content };
}
function say(role: Role, body: string): Message {
  return message(role, text(body));
}
function call(input: unknown, toolCallId = 'c1'): Part {
  return { type: 'tool-call', toolCallId, toolName: 'run', input };
}
function result(output: unknown, toolCallId = 'c1'): Part {
  return { type: 'tool-result', toolCallId, toolName: 'run', output };
}

/**
 * The score of a message as the newest of a one-message conversation, so the recency term is the
 * full `recencyWeight` and every default weight is a multiple of 0.5: sums are exact in floating
 * point and can be compared with strict equality.
 */
function newest(m: Message, c: ImportanceConfig = config): number {
  return scoreMessage(m, 0, 1, c, memo);
}
/** Role weight plus full recency: the score of a message with no other signal. */
function base(role: 'user' | 'assistant' | 'tool', c: ImportanceConfig = config): number {
  const weight = { user: c.roleUser, assistant: c.roleAssistant, tool: c.roleTool }[role];
  return weight + c.recencyWeight;
}
function assertClose(actual: number, expected: number): void {
  assert.ok(Math.abs(actual - expected) < 1e-12, `expected ${expected}, got ${actual}`);
}

describe('importance', () => {
  describe('role', () => {
    it('ranks system above user above assistant when nothing else differs', () => {
      const system = newest(say('system', 'ok'));
      const user = newest(say('user', 'ok'));
      const assistant = newest(say('assistant', 'ok'));
      assert.equal(system, config.roleSystem + config.recencyWeight);
      assert.equal(user, config.roleUser + config.recencyWeight);
      assert.equal(assistant, config.roleAssistant + config.recencyWeight);
      assert.ok(system > user && user > assistant);
    });

    it('gives tool messages the tool role weight', () => {
      assert.equal(newest(message('tool', result('done'))), config.roleTool + config.recencyWeight);
    });
  });

  describe('recency', () => {
    it('scores a newer message higher than an older one with the same content', () => {
      const older = scoreMessage(say('user', 'ok'), 3, 10, config, memo);
      const newer = scoreMessage(say('user', 'ok'), 7, 10, config, memo);
      assert.ok(newer > older);
    });

    it('gives the newest message the full weight and decays older ones exponentially', () => {
      const m = say('user', 'ok');
      assert.equal(scoreMessage(m, 4, 5, config, memo), config.roleUser + config.recencyWeight);
      assertClose(scoreMessage(m, 0, 5, config, memo), config.roleUser + config.recencyWeight * config.recencyDecay ** 4);
      assertClose(scoreMessage(m, 3, 5, config, memo), config.roleUser + config.recencyWeight * config.recencyDecay);
    });

    it('never gives more than the full weight to an index past the newest position', () => {
      assert.equal(scoreMessage(say('user', 'ok'), 9, 5, config, memo), config.roleUser + config.recencyWeight);
    });
  });

  describe('question', () => {
    it('adds exactly questionBonus for a question mark in the text', () => {
      assert.equal(newest(say('user', 'Does it work?')), base('user') + config.questionBonus);
    });

    it('adds it once however many questions there are', () => {
      assert.equal(newest(say('user', 'Why? How? When?')), base('user') + config.questionBonus);
    });

    it('ignores question marks in reasoning, tool output, code and URLs', () => {
      assert.equal(newest(message('assistant', { type: 'reasoning', text: 'Should I?' }, text('ok'))), base('assistant'));
      assert.equal(newest(message('tool', result('really?'))), base('tool'));
      assert.equal(newest(say('user', 'run `a ? b : c` now')), base('user'));
      assert.equal(newest(say('user', 'see https://host.test/page?id=4')), base('user'));
    });
  });

  describe('tool calls', () => {
    it('adds toolCallBonus for a message with a tool call', () => {
      assert.equal(newest(message('assistant', call({ q: 'x' }))), base('assistant') + config.toolCallBonus);
    });

    it('adds it once, not per call', () => {
      const three = message('assistant', call({ q: 'x' }, 'a'), call({ q: 'y' }, 'b'), call({ q: 'z' }, 'c'));
      assert.equal(newest(three), base('assistant') + config.toolCallBonus);
    });
  });

  describe('keywords', () => {
    it('adds keywordBonus for a configured keyword', () => {
      assert.equal(newest(say('user', 'there is a bug here')), base('user') + config.keywordBonus);
    });

    it('adds keywordBonus per distinct keyword, not per occurrence', () => {
      assert.equal(newest(say('user', 'bug bug bug')), base('user') + config.keywordBonus);
      assert.equal(newest(say('user', 'a bug, and an error')), base('user') + 2 * config.keywordBonus);
    });

    it('matches case-insensitively and as a word prefix, but not inside a word', () => {
      assert.equal(newest(say('user', 'The build FAILED')), base('user') + config.keywordBonus);
      assert.equal(newest(say('user', 'a prefix')), base('user'));
    });

    it('counts keywords in tool results', () => {
      assert.equal(newest(message('tool', result('error: not found'))), base('tool') + config.keywordBonus);
      assert.equal(newest(message('tool', result({ stderr: 'build\nerror' }))), base('tool') + config.keywordBonus);
    });

    it('uses the configured keyword list', () => {
      const custom = { ...config, keywords: ['deploy'] };
      assert.equal(newest(say('user', 'the deployment broke'), custom), base('user', custom) + custom.keywordBonus);
      assert.equal(newest(say('user', 'a bug'), custom), base('user', custom));
    });

    it('counts keywords configured twice, in any case, once', () => {
      const doubled = { ...config, keywords: ['bug', 'BUG', 'Bug'] };
      assert.equal(newest(say('user', 'a bug'), doubled), base('user', doubled) + doubled.keywordBonus);
    });
  });

  describe('length', () => {
    it('adds lengthPer100Chars for each full 100 characters', () => {
      assert.equal(newest(say('user', 'a'.repeat(99))), base('user'));
      assert.equal(newest(say('user', 'a'.repeat(100))), base('user') + config.lengthPer100Chars);
      assert.equal(newest(say('user', 'a'.repeat(250))), base('user') + 2 * config.lengthPer100Chars);
    });

    it('caps the length bonus at lengthCap', () => {
      assert.ok(10 * config.lengthPer100Chars > config.lengthCap, 'the test needs text long enough to reach the cap');
      assert.equal(newest(say('user', 'a'.repeat(1000))), base('user') + config.lengthCap);
      assert.equal(newest(say('user', 'a'.repeat(5000))), base('user') + config.lengthCap);
    });
  });

  describe('code blocks', () => {
    it('adds codeBlockBonus for a fenced block', () => {
      assert.equal(newest(say('assistant', 'Use:\n```ts\nconst x = 1;\n```')), base('assistant') + config.codeBlockBonus);
    });

    it('does not count inline code', () => {
      assert.equal(newest(say('assistant', 'call `run` first')), base('assistant'));
    });
  });

  describe('file paths', () => {
    for (const body of ['edit src/core/x.ts', 'run ./a/b.py', 'see README.md', 'read /etc/hosts', 'at src/a.ts:12.']) {
      it(`adds filePathBonus for "${body}"`, () => {
        assert.equal(newest(say('user', body)), base('user') + config.filePathBonus);
      });
    }

    for (const body of [
      'open https://x.y',
      'open https://host.test/docs/page.html',
      'version 1.2.3',
      'upgrade to v1.2.3',
      'pi is 3.14',
      'and/or',
      'e.g. this',
      'on 1/2/2024',
      'run /compact',
      'call this.state.value',
    ]) {
      it(`does not add it for "${body}"`, () => {
        assert.equal(newest(say('user', body)), base('user'));
      });
    }

    it('finds paths in tool-call inputs and tool results', () => {
      assert.equal(newest(message('assistant', call({ path: 'src/a.ts' }))), base('assistant') + config.toolCallBonus + config.filePathBonus);
      assert.equal(newest(message('tool', result({ files: ['lib/util.py'] }))), base('tool') + config.filePathBonus);
    });
  });

  describe('decisions', () => {
    for (const body of ["Let's use zod for this", 'We are going with plan B', 'Take the cache instead of a map']) {
      it(`adds decisionBonus for "${body}"`, () => {
        assert.equal(newest(say('assistant', body)), base('assistant') + config.decisionBonus);
      });
    }

    it('recognises "decided" (which also carries the keyword "decide" by default)', () => {
      const noKeywords = { ...config, keywords: [] };
      assert.equal(newest(say('assistant', 'We decided on zod'), noKeywords), base('assistant', noKeywords) + config.decisionBonus);
    });

    it('does not count a phrase inside another word', () => {
      const noKeywords = { ...config, keywords: [] };
      assert.equal(newest(say('assistant', 'still undecided'), noKeywords), base('assistant', noKeywords));
    });
  });

  describe('configuration', () => {
    it('lets custom role weights flip the order of user and assistant', () => {
      const user = say('user', 'ok');
      const assistant = say('assistant', 'ok');
      assert.ok(newest(user) > newest(assistant));
      const flipped = { ...config, roleAssistant: config.roleUser + 3 };
      assert.ok(newest(assistant, flipped) > newest(user, flipped));
      assert.equal(newest(assistant, flipped), config.roleUser + 3 + config.recencyWeight);
    });

    it('drops a signal whose weight is set to zero', () => {
      const m = say('user', 'Does it work?');
      assert.equal(newest(m, { ...config, questionBonus: 0 }), base('user'));
    });

    it('scores the same message anew when the settings change, and alike when equal settings are read again', () => {
      const m = say('user', 'The deploy failed again?');
      const before = newest(m);
      const noKeywords = { ...config, keywords: [] };
      assert.equal(newest(m, noKeywords), before - config.keywordBonus * 1, 'the keyword no longer counts');
      assert.equal(newest(m, { ...config, questionBonus: config.questionBonus + 5 }), before + 5);
      assert.equal(newest(m, { ...config }), before, 'an equal configuration scores as before');
      // A message too plain to be kept under one configuration is kept under another.
      const plain = say('user', 'ok');
      const measure = (): number => 1;
      assert.deepEqual(selectToKeep([{ message: plain, position: 0 }], 1, config, measure, memo), []);
      assert.deepEqual(selectToKeep([{ message: plain, position: 0 }], 1, { ...config, keepThreshold: -100 }, measure, memo), [0]);
    });
  });

  describe('scoreGroup', () => {
    it('is the maximum of its members, scored at their own positions', () => {
      const request = message('assistant', call({ q: 'x' }));
      const response = message('tool', result('ok'));
      const total = 6;
      const first = 3;
      const expected = Math.max(scoreMessage(request, first, total, config, memo), scoreMessage(response, first + 1, total, config, memo));
      assert.equal(scoreGroup([request, response], first, total, config, memo), expected);
      assert.equal(expected, scoreMessage(request, first, total, config, memo), 'the call should be the stronger member here');
    });

    it('takes a member that outscores the first one', () => {
      const plain = say('assistant', 'ok');
      const important = say('user', 'There is a bug, what now?');
      assert.equal(scoreGroup([plain, important], 0, 2, config, memo), scoreMessage(important, 1, 2, config, memo));
    });

    it('scores an empty group as -Infinity', () => {
      assert.equal(scoreGroup([], 0, 0, config, memo), -Infinity);
    });
  });
});

describe('importance: the keep list (messages kept in full)', () => {
  const decision = say(
    'assistant',
    'We decided to use exponential backoff instead of fixed delays in src/retry/policy.ts:\n```ts\nconst delay = base * 2 ** attempt;\n```',
  );
  const chatter = say('assistant', 'Okay.');
  const call = message('assistant', { type: 'tool-call', toolCallId: 'c', toolName: 'read_file', input: { path: 'a.txt' } });
  const result = message('tool', { type: 'tool-result', toolCallId: 'c', toolName: 'read_file', output: 'plain text' });
  const items = [decision, chatter, call, result].map((m, position) => ({ message: m, position }));
  const length = (m: Message): number => JSON.stringify(m.content).length / 4;

  it('keeps the messages at or above the threshold, in conversation order', () => {
    const scores = items.map((i) => scoreMessage(i.message, i.position, 10, config, memo));
    const threshold = scores[0]! - 0.01;
    assert.ok(
      scores.slice(1).every((s) => s < threshold),
      `the decision outscores the rest: ${scores.join(', ')}`,
    );
    assert.deepEqual(selectToKeep(items, 10, { ...config, keepThreshold: threshold }, length, memo), [0]);
    assert.deepEqual(selectToKeep(items, 10, { ...config, keepThreshold: -100 }, length, memo), [0, 1, 2, 3]);
  });

  it('keeps the default threshold out of reach of routine chatter and of a routine tool call, and within reach of a decision with code and a path', () => {
    assert.deepEqual(selectToKeep(items, 10, config, length, memo), [0]);
  });

  it('fits the budget, the most important first, and skips what does not fit for what does', () => {
    const all = { ...config, keepThreshold: -100 };
    const budget = length(decision) + length(chatter);
    const kept = selectToKeep(items, 10, { ...all, keepBudgetTokens: budget }, length, memo);
    assert.ok(kept.includes(0), 'the decision, most important, is kept');
    assert.ok(kept.reduce((sum, p) => sum + length(items[p]!.message), 0) <= budget);
    assert.deepEqual(selectToKeep(items, 10, { ...all, keepBudgetTokens: 0 }, length, memo), [], 'a budget of 0 keeps nothing');
  });

  it('keeps tool calls and results whatever their score when asked to (keep_tool_results)', () => {
    const high = { ...config, keepThreshold: 1_000 };
    assert.deepEqual(selectToKeep(items, 10, high, length, memo), []);
    assert.deepEqual(selectToKeep(items, 10, { ...high, keepToolResults: true }, length, memo), [2, 3]);
  });
});
