import assert from 'node:assert/strict';
import { EngineMemo } from '../../../src/core/engine-memo';
import { compact, type CompactionDeps, type CompactionRequest } from '../../../src/core/compaction';
import { EMPTY_LEDGER } from '../../../src/core/file-ledger';
import { modelView, undoLastStep, type LogRecord } from '../../../src/core/history';
import { carriedSkills, renderSkillInstructions, skillsLoadedIn } from '../../../src/core/loaded-skills';
import { messageText, stringifyOutput, type Message, type ToolCallPart, type ToolResultPart } from '../../../src/core/messages';
import { pruningCandidates, truncationCandidates } from '../../../src/core/pruning';
import type { SummaryRequest } from '../../../src/core/ports';
import { TOOL_NAMES } from '../../../src/core/tool-names';
import { asLog, assistant, config, estimatingCounter, FakeClock, idGenerator, RecordingSummarizer, sys, toolResult, turn, user } from './fixtures';

const counter = estimatingCounter();

const instructions = (name: string, body: string): string =>
  renderSkillInstructions({ name, folder: `.github/skills/${name}`, body, files: ['references/A.md'] });

/** The model loads skill `name`: `[assistant call, tool result]`, ids `<id>-a` and `<id>`. */
const load = (id: string, name: string, output = instructions(name, `Always run the ${name} checklist. ${'step '.repeat(600)}`)): Message[] => [
  assistant(`${id}-a`, '', { callId: `${id}-c`, tool: TOOL_NAMES.skill, input: { name } }),
  toolResult(id, `${id}-c`, TOOL_NAMES.skill, output),
];

const messagesConfig = config((c) => ({ ...c, keepRecent: { ...c.keepRecent, mode: 'messages', messages: 4 }, minMessages: 4 }));

function setup(summarizer = new RecordingSummarizer()) {
  const deps: CompactionDeps = { counter, summarizer, clock: new FakeClock(), newId: idGenerator(), memo: new EngineMemo() };
  return { deps, summarizer };
}

function request(log: readonly LogRecord[]): CompactionRequest {
  return { log, reason: 'manual', config: messagesConfig, window: { limit: 100_000, source: 'model' }, ledger: EMPTY_LEDGER };
}

describe('loaded skills: instructions of the conversation', () => {
  it('knows a loaded skill by the skill tool and its header only', () => {
    const text = instructions('pdf-forms', 'Fill it.');
    const result = (toolName: string, output: unknown, isError = false): Message => toolResult('r', 'c', toolName, output, isError) satisfies Message;
    assert.deepEqual(skillsLoadedIn([result(TOOL_NAMES.skill, text)]), [{ name: 'pdf-forms', text }]);
    assert.deepEqual(skillsLoadedIn([result(TOOL_NAMES.readFile, text)]), [], 'a file that looks like a skill is a file');
    assert.deepEqual(skillsLoadedIn([result(TOOL_NAMES.skill, 'The skill "pdf-forms" is already loaded …')]), []);
    assert.deepEqual(skillsLoadedIn([result(TOOL_NAMES.skill, text, true)]), []);
    assert.deepEqual(skillsLoadedIn([result(TOOL_NAMES.skill, '<skill-file name="pdf-forms" file="a.md">\nx\n</skill-file>')]), []);
  });

  it('carries the skills the summary before carried, then those the compacted messages loaded, each once', () => {
    const a = { name: 'a', text: instructions('a', 'A') };
    assert.equal(carriedSkills(undefined, [user('u', 'hi')]), undefined);
    const carried = carriedSkills([a], [...load('l1', 'b'), ...load('l2', 'a')]);
    assert.deepEqual(
      carried?.map((s) => s.name),
      ['a', 'b'],
    );
  });

  it('never prunes a loaded skill, however old and large, while a skill’s file is pruned like any output', () => {
    const view = [
      user('u', 'use the skills'),
      ...load('l1', 'review'),
      ...load('l2', 'review'),
      assistant('f-a', '', { callId: 'f-c', tool: TOOL_NAMES.skill, input: { name: 'review', file: 'references/A.md' } }),
      toolResult('f', 'f-c', TOOL_NAMES.skill, `<skill-file name="review" file="references/A.md">\n${'x'.repeat(8_000)}\n</skill-file>`),
      user('u2', 'next'),
    ];
    const countOutput = (_m: Message, part: ToolResultPart) => counter.countText(stringifyOutput(part.output));
    const countStub = (_p: ToolCallPart | ToolResultPart, _k: string, stub: string) => counter.countText(stub);
    const memo = new EngineMemo();
    const candidates = pruningCandidates(view, {
      oldMessageIds: new Set(view.map((m) => m.id)),
      largeOutputTokens: 100,
      alreadyPruned: new Set(),
      countOutput,
      countStub,
      memo,
    });
    assert.deepEqual(
      candidates.map((c) => c.output.messageId),
      ['f'],
    );
    const cut = truncationCandidates(view, { excess: 1_000_000, exclude: new Set(), countOutput, countStub, memo });
    assert.deepEqual(
      cut.map((c) => c.output.messageId),
      ['f'],
    );
  });

  it('puts a skill the summary replaced back after it, word for word, and not into what the summarizer is asked to rewrite', async () => {
    const { deps, summarizer } = setup();
    const loaded = load('l1', 'review');
    const conversation = [
      sys('s', 'You are a coding agent.'),
      ...turn('t1', 'Review the code', 1),
      ...loaded,
      ...turn('t2', 'Go on', 3, 'y'.repeat(2_000)),
      ...turn('t3', 'More', 2),
    ];
    const first = await compact(request(asLog(conversation)), deps);
    assert.equal(first.status, 'compacted');
    if (first.status !== 'compacted' || !first.log) return;
    const skill = loaded[1]!.content[0] as ToolResultPart;
    assert.deepEqual(first.compaction.entry?.skills, [{ name: 'review', text: skill.output }]);
    const summary = first.compaction.view.find((m) => m.summaryOf !== undefined)!;
    assert.ok(messageText(summary).includes(skill.output as string), 'the skill follows the summary verbatim');
    assert.equal(modelView(first.log, deps.memo).find((m) => m.summaryOf)?.id, summary.id);

    // A second compaction carries it on, although no message of the view holds it any more.
    const grown = [...first.log, ...asLog([...turn('t4', 'Again', 3, 'z'.repeat(2_000)), ...turn('t5', 'Last', 2)])];
    const second = await compact(request(grown), deps);
    assert.equal(second.status, 'compacted');
    if (second.status !== 'compacted' || !second.log) return;
    assert.deepEqual(
      second.compaction.entry?.skills?.map((s) => s.name),
      ['review'],
    );
    assert.ok(messageText(second.compaction.view.find((m) => m.summaryOf !== undefined)!).includes(skill.output as string));
    const asked = summarizer.requests.at(-1) as SummaryRequest;
    const previous = asked.messages.find((m) => m.role === 'system' && m.content.startsWith('Previous summary'));
    assert.ok(previous, 'the previous summary is sent');
    assert.ok(!previous.content.includes('Always run the review checklist'), 'without the skill it carries');

    // Undone, the summary before it is in force again, with its skills.
    const undone = undoLastStep(second.log, 1);
    assert.ok('records' in undone);
    if (!('records' in undone)) return;
    const before = modelView([...second.log, ...undone.records], deps.memo).find((m) => m.summaryOf !== undefined)!;
    assert.equal(before.summaryOf, first.compaction.entry?.id);
    assert.ok(messageText(before).includes(skill.output as string));
  });
});
