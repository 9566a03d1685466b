import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { tool, type ToolSet } from 'ai';
import { z } from 'zod';
import type { Conversation } from '../../../src/app/conversation/conversation';
import { PlanKeeper } from '../../../src/app/plan/plan-keeper';
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { DEFAULT_CONFIG, type CompactionConfig } from '../../../src/core/config';
import { isSummaryMessage } from '../../../src/core/history';
import { MessageTokenCounter } from '../../../src/core/message-tokens';
import { messageText, text } from '../../../src/core/messages';
import type { Summarizer } from '../../../src/core/ports';
import { charEstimator } from '../../../src/core/tokenizer';
import { WORK_STATE_MAX_TOKENS } from '../../../src/core/work-state';
import { createAgentTools } from '../../../src/llm/agent-tools';
import { runAgentTurn, type AgentUi } from '../../../src/llm/agent';
import { FakeClock, templateSummary } from '../core/fixtures';
import { newConversation } from '../fixtures/conversation-deps';
import { FINISHED, LOST, planOnlyInWorkState, standInModel } from './plan-stand-in';

/** A summarizer that keeps nothing of the plan: only the engine's blocks can carry it. */
const forgetful: Summarizer = {
  name: 'forgetful',
  summarize: async () => ({ text: templateSummary('Files were read. Work is ongoing.') }),
};

class Ui implements AgentUi {
  readonly texts: string[] = [];
  readonly notices: string[] = [];
  readonly compactions: string[] = [];
  text(delta: string): void {
    this.texts.push(delta);
  }
  toolCall(): void {}
  compacting(): void {}
  compacted(outcome: { status: string }, reason: string): void {
    this.compactions.push(`${reason}:${outcome.status}`);
  }
  notice(message: string): void {
    this.notices.push(message);
  }
}

/** The work state of the summary in force in `conversation`'s view. */
function workState(conversation: Conversation): string {
  const summary = conversation.view().find(isSummaryMessage)!;
  return /<work-state>[\s\S]*<\/work-state>/.exec(messageText(summary))![0];
}

describe('a long turn compacted in its middle goes on from its plan', () => {
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'longrun-plan-turn-'));
  });
  afterEach(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  async function setup(limit: number, summarizer: Summarizer = forgetful) {
    const clock = new FakeClock();
    const counter = new MessageTokenCounter(charEstimator);
    const config: CompactionConfig = { ...DEFAULT_CONFIG, minMessages: 2, keepRecent: { ...DEFAULT_CONFIG.keepRecent, mode: 'tokens', tokens: 300 } };
    const conversation = newConversation({
      store: new ConversationStore(join(dir, 'store'), () => clock.now()),
      clock,
      config,
      model: { name: 'stand-in', limit, counter },
      summarizer,
    });
    const workspace = join(dir, 'ws');
    await mkdir(workspace, { recursive: true });
    const reads: string[] = [];
    let ids = 0;
    const plan = new PlanKeeper({
      conversation,
      roots: () => [{ name: 'ws', fsPath: workspace }],
      newId: () => `plan${++ids}`,
      now: () => clock.now(),
    });
    const tools: ToolSet = {
      ...createAgentTools({} as never, { readOnly: true, plan }),
      read_file: tool({
        description: 'read',
        inputSchema: z.object({ path: z.string() }),
        execute: async ({ path }) => {
          reads.push(path);
          return `contents of ${path}\n${'x'.repeat(3_000)}`;
        },
      }),
    };
    return { conversation, tools, reads, ui: new Ui() };
  }

  async function turn(s: Awaited<ReturnType<typeof setup>>, request: string, model = standInModel()) {
    await s.conversation.append([{ type: 'message', message: { id: `u${request.length}`, role: 'user', content: [text(request)] } }]);
    const result = await runAgentTurn({
      model,
      system: 'You are a test agent.',
      tools: s.tools,
      maxSteps: 60,
      signal: new AbortController().signal,
      conversation: {
        view: () => s.conversation.view(),
        append: (records) => s.conversation.append(records),
        assess: () => s.conversation.assess(),
        compact: (reason, signal) => s.conversation.compact(reason, { signal }),
        requestBasis: () => s.conversation.requestBasis(),
        newId: () => `m${Math.random().toString(36).slice(2)}`,
        log: () => s.conversation.log(),
        guard: s.conversation.guard(),
      },
      ui: s.ui,
      overflowRetriesPerTurn: 1,
    });
    return { result, model };
  }

  const files = Array.from({ length: 10 }, (_, i) => `f${i + 1}.ts`);

  it('reaches its end without a "continue", each file read once, its plan found in the work state once the calls are summarized', async () => {
    const s = await setup(2_000);
    const { result, model } = await turn(s, `Please read ${files.join(' ')}`);
    assert.equal(result.error, undefined);
    assert.ok(s.ui.compactions.filter((c) => c === 'threshold:compacted').length >= 2, `compacted in the turn: ${s.ui.compactions.join(', ')}`);
    assert.equal(s.ui.texts.join(''), FINISHED, 'the turn ended with the plan done, not waiting for the user');
    assert.deepEqual(s.reads, files, 'each file read once, in order');
    assert.ok(
      model.doStreamCalls.some((call) => planOnlyInWorkState(call.prompt)),
      'at least one step found its plan only in the work state',
    );
    assert.equal(result.compactionLoop, undefined);
  });

  it('holds, after each compaction in the turn, the plan word for word with its marks, the request, and where the agent is, once', async () => {
    const s = await setup(2_000);
    const { model } = await turn(s, `Please read ${files.join(' ')}`);
    const after = model.doStreamCalls.filter((call) => call.prompt.some((m) => m.role === 'user' && /<work-state>/.test(JSON.stringify(m.content))));
    assert.ok(after.length > 0);
    for (const call of after) {
      const sent = JSON.stringify(call.prompt);
      assert.equal(sent.split('<work-state>').length - 1, 1, 'one work state, never repeated');
      assert.ok(sent.includes(`Please read ${files.join(' ')}`), "the user's request word for word");
      assert.match(sent, /Step in progress: \d+\. Read f\d+\.ts/);
      assert.match(sent, /Last tool call: (read_file|plan)/);
      assert.match(sent, /go on with the step in progress \(or the next pending one\) now, without waiting/);
    }
    // The summary in force: the plan as its last update left it, each line as the engine writes it.
    assert.match(workState(s.conversation), /^1\. \[done — unverified: no evidence named\] Read f1\.ts$/m);
  });

  it('keeps the work state within its bound for a plan of fifty long steps, the step in progress and those to do first', async () => {
    const s = await setup(2_000);
    const long = (i: number): string => `Read f${i}.ts ${'and think hard about what it says '.repeat(5).trim()}`.slice(0, 200);
    const steps = Array.from({ length: 50 }, (_, i) => ({ step: long(i), status: i < 30 ? 'done' : i === 30 ? 'in_progress' : 'pending' }));
    await s.conversation.append([{ type: 'message', message: { id: 'u0', role: 'user', content: [text('a long plan')] } }]);
    await s.tools['plan']!.execute!({ steps }, { toolCallId: 'p', messages: [], context: {} });
    for (let i = 0; i < 8; i++) {
      await s.conversation.append([
        {
          type: 'message',
          message: {
            id: `a${i}`,
            role: 'assistant',
            content: [{ type: 'tool-call', toolCallId: `r${i}`, toolName: 'read_file', input: { path: `f${i}.ts` } }],
          },
        },
        {
          type: 'message',
          message: {
            id: `t${i}`,
            role: 'tool',
            content: [{ type: 'tool-result', toolCallId: `r${i}`, toolName: 'read_file', output: 'x'.repeat(2_000) }],
          },
        },
      ]);
    }
    const outcome = await s.conversation.compact('threshold');
    assert.equal(outcome.status, 'compacted');
    const block = workState(s.conversation);
    assert.ok(new MessageTokenCounter(charEstimator).countText(block) <= WORK_STATE_MAX_TOKENS);
    assert.ok(block.includes(`31. [in progress] ${long(30)}`), 'the step in progress');
    assert.ok(block.includes(`50. [pending] ${long(49)}`), 'the last step to do');
    assert.match(block, /left out for length: \d+ done/);
  });

  it('loses its place after a compaction that leaves no plan call in view, without the work state (what the work state prevents)', async () => {
    const s = await setup(2_000);
    // The same turn, by a model that does not read the summaries' work state.
    const model = standInModel(true);
    await turn(s, `Please read ${files.join(' ')}`, model);
    assert.equal(s.ui.texts.join(''), LOST);
    assert.ok(s.reads.length < files.length);
  });

  for (const reason of ['threshold', 'overflow', 'manual'] as const) {
    it(`holds after ${reason === 'overflow' ? 'an' : 'a'} ${reason} compaction the plan word for word, the request, and where the agent is, and never twice`, async () => {
      const s = await setup(100_000);
      const request = 'Please read f1.ts f2.ts f3.ts and sum them up';
      await s.conversation.append([{ type: 'message', message: { id: 'u1', role: 'user', content: [text(request)] } }]);
      const steps = [
        { step: 'Read f1.ts', status: 'done' },
        { step: 'Read f2.ts', status: 'in_progress', note: 'halfway' },
        { step: 'Read f3.ts', status: 'pending' },
      ];
      await s.tools['plan']!.execute!({ steps }, { toolCallId: 'p', messages: [], context: {} });
      for (let i = 0; i < 6; i++) {
        await s.conversation.append([
          {
            type: 'message',
            message: {
              id: `a${i}`,
              role: 'assistant',
              content: [{ type: 'tool-call', toolCallId: `r${i}`, toolName: 'read_file', input: { path: `f2-${i}.ts` } }],
            },
          },
          {
            type: 'message',
            message: {
              id: `t${i}`,
              role: 'tool',
              content: [{ type: 'tool-result', toolCallId: `r${i}`, toolName: 'read_file', output: `part ${i} of f2\n${'y'.repeat(3_000)}` }],
            },
          },
        ]);
      }
      for (let round = 1; round <= 2; round++) {
        const outcome = await s.conversation.compact(reason, { keepLess: round === 2 });
        assert.equal(outcome.status, 'compacted', `round ${round}`);
        const view = s.conversation.view();
        const sent = view.map(messageText).join('\n');
        assert.equal(sent.split('<work-state>').length - 1, 1, `round ${round}: one work state`);
        const block = workState(s.conversation);
        assert.ok(
          block.includes(
            '1. [done — unverified: no evidence named] Read f1.ts\n2. [in progress] Read f2.ts · note: halfway\n3. [pending] Read f3.ts',
          ),
          block,
        );
        assert.ok(block.includes('Step in progress: 2. Read f2.ts'));
        if (round === 1) {
          assert.ok(block.includes('Last tool call: read_file {"path":"f2-5.ts"}; its result is kept after this summary.'), block);
          assert.ok(JSON.stringify(view).includes('part 5 of f2'), 'and it is');
        } else {
          // Compacted harder, the summary took the last call too: its first lines come with the work state.
          assert.ok(block.includes('Last tool call: read_file {"path":"f2-5.ts"}; its result began:\n    part 5 of f2\n'), block);
        }
        assert.ok(
          view.some((m) => m.role === 'user' && !isSummaryMessage(m) && messageText(m) === request),
          'the request word for word',
        );
      }
    });
  }

  it('takes out a work state the summarizer copied, and makes its own', async () => {
    const copying: Summarizer = {
      name: 'copying',
      summarize: async () => ({ text: `${templateSummary('Copied.')}\n\n<work-state>\nStep in progress: 9. stale\n</work-state>` }),
    };
    const { conversation } = await setup(100_000, copying);
    await conversation.append([{ type: 'message', message: { id: 'u1', role: 'user', content: [text('go')] } }]);
    await conversation.append([{ type: 'plan', plan: { id: 'p1', steps: [{ step: 'Go', status: 'in_progress' }], at: 1 } }]);
    for (let i = 0; i < 4; i++) {
      await conversation.append([
        {
          type: 'message',
          message: {
            id: `a${i}`,
            role: 'assistant',
            content: [{ type: 'tool-call', toolCallId: `r${i}`, toolName: 'read_file', input: { path: `a${i}` } }],
          },
        },
        {
          type: 'message',
          message: {
            id: `t${i}`,
            role: 'tool',
            content: [{ type: 'tool-result', toolCallId: `r${i}`, toolName: 'read_file', output: 'z'.repeat(3_000) }],
          },
        },
      ]);
    }
    assert.equal((await conversation.compact('manual')).status, 'compacted');
    const block = workState(conversation);
    assert.doesNotMatch(block, /stale/);
    assert.match(block, /Step in progress: 1\. Go/);
    assert.equal(conversation.view().map(messageText).join('\n').split('<work-state>').length - 1, 1);
  });

  it('keeps less of the recent work when asked to compact harder', async () => {
    const kept = async (keepLess: boolean): Promise<number> => {
      const { conversation } = await setup(100_000);
      await conversation.append([{ type: 'message', message: { id: 'u1', role: 'user', content: [text('go')] } }]);
      for (let i = 0; i < 12; i++) {
        await conversation.append([
          {
            type: 'message',
            message: {
              id: `a${i}`,
              role: 'assistant',
              content: [{ type: 'tool-call', toolCallId: `r${i}`, toolName: 'read_file', input: { path: `k${i}` } }],
            },
          },
          {
            type: 'message',
            message: {
              id: `t${i}`,
              role: 'tool',
              content: [{ type: 'tool-result', toolCallId: `r${i}`, toolName: 'read_file', output: 'k'.repeat(400) }],
            },
          },
        ]);
      }
      const outcome = await conversation.compact('manual', { keepLess });
      assert.equal(outcome.status, 'compacted');
      await rm(join(dir, 'store'), { recursive: true, force: true });
      return conversation.view().filter((m) => m.role === 'tool').length;
    };
    const plain = await kept(false);
    const harder = await kept(true);
    assert.ok(harder < plain, `${harder} results kept, against ${plain}`);
  });
});
