import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import * as path from 'node:path';
import { DEFAULT_CONFIG } from '../../../src/core/config';
import { DEFAULT_PROVIDER_KIND, PROVIDER_KINDS } from '../../../src/core/provider-kind';
import { formatProblem, readSettings, RENAMED_SETTINGS, settingDefaults, type SettingProblem } from '../../../src/app/settings';

/** A getter over `longrun.*` values given by their full keys, as VS Code's configuration does. */
function getter(values: Record<string, unknown>): (key: string) => unknown {
  return (key) => values[`longrun.${key}`];
}

const read = (values: Record<string, unknown>) => readSettings(getter(values));

const ollama = { name: 'ollama', baseUrl: 'http://localhost:11434/v1', models: [{ id: 'llama3.1', contextWindow: 131072 }] };

describe('settings: longrun.* onto the core configuration', () => {
  it("refuses a context window below 1,024 tokens from a workspace's settings, saying why", () => {
    const fromWorkspace = (user?: unknown) => () => ({ fromWorkspace: true, ...(user !== undefined ? { userValue: user } : {}) });
    const { settings, problems } = readSettings(getter({ 'longrun.contextWindow': 1 }), fromWorkspace());
    assert.equal(settings.contextWindow, undefined, "the model's own window");
    assert.equal(
      formatProblem(problems[0]!),
      'Longrun: "longrun.contextWindow" is 1, which is not valid (below 1,024 tokens in the settings of this workspace, where a repository could set it to force a compaction at every step; set it in your user settings if you mean it); using 0 instead.',
    );
    const kept = readSettings(getter({ 'longrun.contextWindow': 500 }), fromWorkspace(32_000));
    assert.equal(kept.settings.contextWindow, 32_000, "the user's own value");
    assert.equal(kept.problems[0]?.usedInstead, 32_000);
    assert.equal(readSettings(getter({ 'longrun.contextWindow': 1_024 }), fromWorkspace()).settings.contextWindow, 1_024);
    assert.equal(readSettings(getter({ 'longrun.contextWindow': 1 }), () => ({ fromWorkspace: false })).settings.contextWindow, 1, 'the user may');
  });

  it('gives the defaults when nothing is set', () => {
    const { settings, problems } = readSettings(() => undefined);
    assert.deepEqual(problems, []);
    assert.deepEqual(settings, {
      compaction: DEFAULT_CONFIG,
      requireConfirmation: false,
      showWarnings: true,
      summaryContinuesConversation: true,
      endpoints: [],
      agent: { autoApproveEdits: false, maxSteps: 25, protectedPaths: [], allowedCommands: [], commandTimeoutSeconds: 120, editorTools: [] },
      subagent: { maxSteps: 15, maxTokens: 200_000 },
      telemetry: { enabled: false },
      timeouts: { firstChunkMs: 600_000, idleMs: 120_000 },
      verboseLogging: false,
      cache: { ttl: '5m', openaiRetention24h: false, coldCompaction: true },
      modelOverrides: {},
      skills: { userFolders: [] },
    });
  });

  it('reads the cache settings and the models’ overrides, each entry on its own with a clear problem for a bad one', () => {
    const { settings, problems } = read({
      'longrun.cache.ttl': '1h',
      'longrun.cache.openaiRetention': '24h',
      'longrun.cache.coldCompaction': false,
      'longrun.models.overrides': {
        'qwen3-coder': { contextWindow: 262_144, input: 0.4, output: 1.6 },
        'claude-sonnet-4-5': { cacheRead: 0.3 },
        typo: { inputPrice: 3 },
        negative: { output: -1 },
      },
    });
    assert.deepEqual(settings.cache, { ttl: '1h', openaiRetention24h: true, coldCompaction: false });
    assert.deepEqual(settings.modelOverrides, {
      'qwen3-coder': { contextWindow: 262_144, input: 0.4, output: 1.6 },
      'claude-sonnet-4-5': { cacheRead: 0.3 },
    });
    assert.deepEqual(
      problems.map((p) => formatProblem(p)),
      [
        'Longrun: "longrun.models.overrides" contains {"typo":{"inputPrice":3}}, which is not valid (the entry of "typo": Unrecognized key: "inputPrice"); it is ignored.',
        'Longrun: "longrun.models.overrides" contains {"negative":{"output":-1}}, which is not valid (the entry of "negative": output must be at least 0); it is ignored.',
      ],
    );
    const wrong = read({ 'longrun.models.overrides': ['qwen'], 'longrun.cache.ttl': '10m' });
    assert.deepEqual(wrong.settings.modelOverrides, {});
    assert.equal(wrong.settings.cache.ttl, '5m');
    assert.equal(wrong.problems.length, 2);
  });

  it("reads the subagents' model and budgets, and refuses a model that is no reference", () => {
    const { settings, problems } = read({
      'longrun.subagent.model': ' longrun/local/qwen3 ',
      'longrun.subagent.maxSteps': 6,
      'longrun.subagent.maxTokens': 50_000,
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(settings.subagent, { model: 'longrun/local/qwen3', maxSteps: 6, maxTokens: 50_000 });
    const bad = read({ 'longrun.subagent.model': 'gpt-4o', 'longrun.subagent.maxSteps': 1 });
    assert.deepEqual(bad.settings.subagent, { maxSteps: 15, maxTokens: 200_000 });
    assert.deepEqual(
      bad.problems.map((p) => p.setting),
      ['longrun.subagent.model', 'longrun.subagent.maxSteps'],
    );
  });

  it('maps valid values onto the core configuration', () => {
    const { settings, problems } = read({
      'longrun.compaction.auto': false,
      'longrun.compaction.thresholdMode': 'percent',
      'longrun.compaction.warningThreshold': 0.5,
      'longrun.compaction.criticalThreshold': 0.95,
      'longrun.compaction.windowThreshold': 0.7,
      'longrun.compaction.keepRecent.mode': 'messages',
      'longrun.compaction.keepRecent.messages': 4,
      'longrun.compaction.summary.preservePaths': false,
      'longrun.compaction.summary.customPrompt': 'Summarize.\nKeep decisions.',
      'longrun.compaction.importance.roleTool': 7,
      'longrun.compaction.importance.keywords': ['deadline'],
      'longrun.compaction.summarizerTimeoutSeconds': 30,
      'longrun.compaction.onSummarizerFailure': 'keep-history',
      'longrun.compaction.requireConfirmation': true,
      'longrun.compaction.showWarnings': false,
      'longrun.compaction.model': 'copilot/gpt-4o-mini',
      'longrun.contextWindow': 128000,
      'longrun.agent.autoApproveEdits': true,
      'longrun.agent.maxSteps': 60,
      'longrun.agent.protectedPaths': ['secrets/**', ' **/*.pem '],
      'longrun.agent.allowedCommands': ['npm test', 'git status *'],
      'longrun.agent.commandTimeoutSeconds': 30,
      'longrun.agent.editorTools': ['mcp_github_search', ' ext_lookup '],
      'longrun.telemetry.enabled': true,
      'longrun.telemetry.otlpEndpoint': 'http://localhost:4318/v1/traces',
      'longrun.logging.verbose': true,
    });
    assert.deepEqual(problems, []);
    const c = settings.compaction;
    assert.equal(c.autoCompact, false);
    assert.deepEqual(
      [c.trigger.mode, c.trigger.warningThreshold, c.trigger.criticalThreshold, c.trigger.windowThreshold],
      ['percent', 0.5, 0.95, 0.7],
    );
    assert.deepEqual([c.keepRecent.mode, c.keepRecent.messages], ['messages', 4]);
    assert.equal(c.summary.preserveFilePaths, false);
    assert.equal(c.summary.preserveCodeBlocks, true);
    assert.equal(c.summary.customPrompt, 'Summarize.\nKeep decisions.');
    assert.equal(c.importance.roleTool, 7);
    assert.deepEqual(c.importance.keywords, ['deadline']);
    assert.equal(c.summarizerTimeoutMs, 30_000);
    assert.equal(c.onSummarizerFailure, 'keep-history');
    assert.equal(settings.requireConfirmation, true);
    assert.equal(settings.showWarnings, false);
    assert.equal(settings.summarizerModel, 'copilot/gpt-4o-mini');
    assert.equal(settings.contextWindow, 128000);
    assert.deepEqual(settings.agent, {
      autoApproveEdits: true,
      maxSteps: 60,
      protectedPaths: ['secrets/**', '**/*.pem'],
      allowedCommands: ['npm test', 'git status *'],
      commandTimeoutSeconds: 30,
      editorTools: ['mcp_github_search', 'ext_lookup'],
    });
    assert.deepEqual(settings.telemetry, { enabled: true, otlpEndpoint: 'http://localhost:4318/v1/traces' });
    assert.equal(settings.verboseLogging, true);
  });

  it('reads the truncation limits and the overflow retries per turn', () => {
    const { settings, problems } = read({
      'longrun.compaction.truncation.resultChars': 3_000,
      'longrun.compaction.truncation.hugeResultChars': 12_000,
      'longrun.compaction.truncation.messageChars': 8_000,
      'longrun.compaction.overflowRetries': 2,
    });
    assert.deepEqual(problems, []);
    assert.deepEqual(settings.compaction.truncation, { resultChars: 3_000, hugeResultChars: 12_000, messageChars: 8_000 });
    assert.equal(settings.compaction.overflowRetriesPerTurn, 2);
    const bad = read({ 'longrun.compaction.overflowRetries': 9 });
    assert.equal(bad.settings.compaction.overflowRetriesPerTurn, 1);
    assert.equal(bad.problems[0]?.setting, 'longrun.compaction.overflowRetries');
  });

  it('turns fractional timeout seconds into whole milliseconds', () => {
    const { settings, problems } = read({ 'longrun.compaction.summarizerTimeoutSeconds': 1.1 });
    assert.deepEqual(problems, []);
    assert.equal(settings.compaction.summarizerTimeoutMs, 1100);
  });

  describe('replaces each invalid value by its default, with exactly one problem', () => {
    const cases: Array<[key: string, value: unknown, usedInstead: unknown]> = [
      ['compaction.auto', 'yes', true],
      ['compaction.thresholdMode', 'sometimes', 'levels'],
      ['compaction.warningThreshold', 7, 0.75],
      ['compaction.criticalThreshold', -1, 0.9],
      ['compaction.reserveTokens', 10.5, 16_384],
      ['compaction.keepRecent.tokensShare', 2, 0.35],
      ['compaction.minMessages', -3, 6],
      ['compaction.summary.depth', 'epic', 'standard'],
      ['compaction.summary.preservePaths', 'no', true],
      ['compaction.summary.targetTokens', 10, 800],
      ['compaction.summary.temperature', 3, 0.3],
      ['compaction.summary.customPrompt', 42, ''],
      ['compaction.importance.recencyDecay', 0, 0.95],
      ['compaction.importance.keywords', ['ok', 3], DEFAULT_CONFIG.importance.keywords],
      ['compaction.minGainShare', 'lots', 0.1],
      ['compaction.onSummarizerFailure', 'panic', 'fallback'],
      ['compaction.summarizerTimeoutSeconds', 0, 120],
      ['compaction.requireConfirmation', 1, false],
      ['compaction.showWarnings', 'on', true],
      ['compaction.model', 'gpt-4o', ''],
      ['contextWindow', -5, 0],
      ['agent.autoApproveEdits', 'true', false],
      ['agent.maxSteps', 500, 25],
      ['agent.maxSteps', 2.5, 25],
      ['telemetry.enabled', 'yes', false],
      ['telemetry.otlpEndpoint', 'localhost:4318', ''],
      ['logging.verbose', 0, false],
      ['endpoints', { name: 'x' }, []],
      ['agent.protectedPaths', 'secrets/**', []],
      ['agent.allowedCommands', 'npm test', []],
      ['agent.commandTimeoutSeconds', 0, 120],
    ];
    for (const [key, value, usedInstead] of cases) {
      it(`longrun.${key} = ${JSON.stringify(value)}`, () => {
        const { settings, problems } = read({ [`longrun.${key}`]: value });
        assert.equal(problems.length, 1, JSON.stringify(problems));
        const [problem] = problems as [SettingProblem];
        assert.equal(problem.setting, `longrun.${key}`);
        assert.deepEqual(problem.value, value);
        assert.deepEqual(problem.usedInstead, usedInstead);
        assert.ok(problem.message.length > 0);
        // The value in force is the default one.
        assert.deepEqual(settings, readSettings(() => undefined).settings);
      });
    }
  });

  it('says what is wrong in one sentence naming the setting and the value used instead', () => {
    const { problems } = read({ 'longrun.compaction.warningThreshold': 7 });
    assert.equal(
      formatProblem(problems[0]!),
      'Longrun: "longrun.compaction.warningThreshold" is 7, which is not valid (must be at most 1); using 0.75 instead.',
    );
    const [mode] = read({ 'longrun.compaction.thresholdMode': 'often' }).problems;
    assert.equal(
      formatProblem(mode!),
      'Longrun: "longrun.compaction.thresholdMode" is "often", which is not valid (must be one of "levels", "reserve", "reserved-percent", "percent"); using "levels" instead.',
    );
    const [keywords] = read({ 'longrun.compaction.importance.keywords': ['ok', ''] }).problems;
    assert.match(keywords!.message, /^item 2 must not be empty$/);
  });

  it('uses a value set under the old name of a renamed setting, and says the new name', () => {
    const defaults = { 'longrun.compaction.windowThreshold': 0.8, 'longrun.compaction.reservedThreshold': 0.8 };
    const { settings, problems } = read({ ...defaults, 'longrun.compaction.percent': 0.6, 'longrun.compaction.thresholdPercent': 0.7 });
    assert.equal(settings.compaction.trigger.windowThreshold, 0.6);
    assert.equal(settings.compaction.trigger.reservedThreshold, 0.7);
    assert.deepEqual(problems.map(formatProblem), [
      'Longrun: "longrun.compaction.thresholdPercent" is now "longrun.compaction.reservedThreshold"; your 0.7 is used until you rename it in your settings.',
      'Longrun: "longrun.compaction.percent" is now "longrun.compaction.windowThreshold"; your 0.6 is used until you rename it in your settings.',
    ]);
    // Set under its new name too, the new name wins and the old one is left alone.
    const both = read({ 'longrun.compaction.windowThreshold': 0.5, 'longrun.compaction.percent': 0.6 });
    assert.equal(both.settings.compaction.trigger.windowThreshold, 0.5);
    assert.deepEqual(both.problems, []);
    // An invalid old value is reported against the new name, as any invalid value is.
    const invalid = read({ 'longrun.compaction.percent': 3 });
    assert.equal(invalid.settings.compaction.trigger.windowThreshold, 0.8);
    assert.ok(
      invalid.problems.some((p) => p.setting === 'longrun.compaction.windowThreshold' && /at most 1/.test(p.message)),
      JSON.stringify(invalid.problems),
    );
  });

  it('reports a warning level above the critical one and uses the critical level', () => {
    const { settings, problems } = read({ 'longrun.compaction.warningThreshold': 0.95, 'longrun.compaction.criticalThreshold': 0.8 });
    assert.equal(settings.compaction.trigger.warningThreshold, 0.8);
    assert.equal(settings.compaction.trigger.criticalThreshold, 0.8);
    assert.equal(problems.length, 1);
    assert.equal(problems[0]!.setting, 'longrun.compaction.warningThreshold');
    assert.equal(problems[0]!.value, 0.95);
    assert.equal(problems[0]!.usedInstead, 0.8);
    assert.equal(
      formatProblem(problems[0]!),
      'Longrun: "longrun.compaction.warningThreshold" is 0.95, which is not valid (must not be above "longrun.compaction.criticalThreshold" (0.8)); using 0.8 instead.',
    );
  });

  it('reports an invalid warning level once even when its default is above the critical level', () => {
    const { settings, problems } = read({ 'longrun.compaction.warningThreshold': 7, 'longrun.compaction.criticalThreshold': 0.5 });
    assert.equal(settings.compaction.trigger.warningThreshold, 0.5);
    assert.equal(problems.length, 1);
    assert.deepEqual([problems[0]!.setting, problems[0]!.value, problems[0]!.usedInstead], ['longrun.compaction.warningThreshold', 7, 0.5]);
  });

  it('keeps the valid protected paths and reports each invalid one, so one typo does not lift the others', () => {
    const { settings, problems } = read({ 'longrun.agent.protectedPaths': ['secrets/**', '', 7, '**/*.pem'] });
    assert.deepEqual(settings.agent.protectedPaths, ['secrets/**', '**/*.pem']);
    assert.deepEqual(
      problems.map((p) => [p.setting, p.value, p.message, p.usedInstead]),
      [
        ['longrun.agent.protectedPaths', '', 'item 2 must not be empty', undefined],
        ['longrun.agent.protectedPaths', 7, 'item 3 must be a string', undefined],
      ],
    );
    assert.equal(
      formatProblem(problems[0]!),
      'Longrun: "longrun.agent.protectedPaths" contains "", which is not valid (item 2 must not be empty); it is ignored.',
    );
  });

  it('keeps the valid editor tool names, "*" for all of them, and reports an entry that is no name', () => {
    const { settings, problems } = read({ 'longrun.agent.editorTools': ['ext_lookup', '', 42, '*'] });
    assert.deepEqual(settings.agent.editorTools, ['ext_lookup', '*']);
    assert.deepEqual(
      problems.map((p) => [p.setting, p.message]),
      [
        ['longrun.agent.editorTools', 'item 2 must not be empty'],
        ['longrun.agent.editorTools', 'item 3 must be a string'],
      ],
    );
    assert.deepEqual(
      read({ 'longrun.agent.editorTools': 'all' }).problems.map((p) => [p.message, p.usedInstead]),
      [['must be a list of tool names', []]],
    );
  });

  it('keeps the valid allowed commands and reports an entry that would allow every command or could never match', () => {
    const { settings, problems } = read({ 'longrun.agent.allowedCommands': ['npm test', '*', 'make *', 'npm run build && *', ' ', 'git log -1'] });
    assert.deepEqual(settings.agent.allowedCommands, ['npm test', 'make *', 'git log -1']);
    assert.deepEqual(
      problems.map((p) => [p.value, p.message]),
      [
        ['*', 'item 2 would allow every command; list the commands, or their first words followed by " *"'],
        ['npm run build && *', 'item 4 is a prefix rule with a shell operator in it (; & | ` $( < > !), which no command it allows may contain'],
        [' ', 'item 5 must not be empty'],
      ],
    );
  });

  describe('endpoints', () => {
    it('keeps valid endpoints, with tool calling on unless turned off', () => {
      const lmStudio = {
        name: 'lm-studio',
        baseUrl: 'https://lm.example.com/v1',
        models: [{ id: 'qwen', name: 'Qwen', maxOutputTokens: 4096, toolCalling: false }],
      };
      const { settings, problems } = read({ 'longrun.endpoints': [ollama, lmStudio] });
      assert.deepEqual(problems, []);
      assert.deepEqual(settings.endpoints, [
        { name: 'ollama', baseUrl: 'http://localhost:11434/v1', models: [{ id: 'llama3.1', contextWindow: 131072, toolCalling: true }] },
        lmStudio,
      ]);
    });

    it('drops each malformed endpoint with one problem and keeps the others', () => {
      const bad = [
        { name: 'ftp', baseUrl: 'ftp://files.example.com', models: [{ id: 'm' }] },
        { baseUrl: 'http://localhost:1234/v1', models: [{ id: 'm' }] },
        { name: 'has/slash', baseUrl: 'http://localhost:1234/v1', models: [{ id: 'm' }] },
        { name: 'bad-model', baseUrl: 'http://localhost:1234/v1', models: [{ id: 'm', contextWindow: 'big' }] },
        { ...ollama, baseUrl: 'http://elsewhere:11434/v1' },
        'not an endpoint',
      ];
      const second = { name: 'second', baseUrl: 'http://localhost:8000/v1', models: [{ id: 'm' }] };
      // No models named: those the server lists are offered.
      const listed = { name: 'listed', baseUrl: 'http://localhost:1234/v1' };
      const { settings, problems } = read({ 'longrun.endpoints': [ollama, ...bad, second, listed] });
      assert.deepEqual(
        settings.endpoints.map((e) => e.name),
        ['ollama', 'second', 'listed'],
      );
      assert.deepEqual(settings.endpoints[2]!.models, []);
      assert.equal(settings.endpoints[0]!.baseUrl, ollama.baseUrl);
      assert.equal(problems.length, bad.length);
      assert.ok(problems.every((p) => p.setting === 'longrun.endpoints' && p.usedInstead === undefined));
      assert.deepEqual(
        problems.map((p) => p.value),
        bad,
      );
      const messages = problems.map((p) => p.message);
      assert.match(messages[0]!, /^entry 2 \("ftp"\): baseUrl must be an http or https URL$/);
      assert.match(messages[1]!, /^entry 3: name is missing$/);
      assert.match(messages[2]!, /^entry 4 \("has\/slash"\): name must be an id/);
      assert.match(messages[3]!, /^entry 5 \("bad-model"\): in models item 1, contextWindow must be a number$/);
      assert.match(messages[4]!, /^entry 6 \("ollama"\): the name "ollama" is already used by entry 1$/);
      assert.match(formatProblem(problems[0]!), /^Longrun: "longrun.endpoints" contains \{.*\}, which is not valid \(entry 2 .*\); it is ignored\.$/);
    });

    it("keeps each endpoint's provider, and gives a native provider without a base URL its API's own root", () => {
      const claude = { name: 'claude', provider: 'anthropic', models: [{ id: 'claude-sonnet-4-5' }] };
      const gemini = { name: 'gemini', provider: 'google', models: [{ id: 'gemini-2.5-flash' }] };
      const router = { name: 'router', provider: 'openrouter', models: [{ id: 'anthropic/claude-sonnet-4.5' }] };
      const gpt = { name: 'gpt', provider: 'openai', models: [{ id: 'gpt-5' }] };
      const proxy = { name: 'proxy', provider: 'anthropic', baseUrl: 'http://127.0.0.1:4000', models: [{ id: 'claude-haiku-4-5' }] };
      const local = { ...ollama, name: 'local', provider: 'openai-compatible' };
      const { settings, problems } = read({ 'longrun.endpoints': [claude, gemini, router, gpt, proxy, local] });
      assert.deepEqual(problems, []);
      assert.deepEqual(
        settings.endpoints.map((e) => [e.name, e.provider, e.baseUrl]),
        [
          ['claude', 'anthropic', 'https://api.anthropic.com/v1'],
          ['gemini', 'google', 'https://generativelanguage.googleapis.com/v1beta'],
          ['router', 'openrouter', 'https://openrouter.ai/api/v1'],
          ['gpt', 'openai', 'https://api.openai.com/v1'],
          ['proxy', 'anthropic', 'http://127.0.0.1:4000'],
          ['local', 'openai-compatible', 'http://localhost:11434/v1'],
        ],
      );
    });

    it('refuses an endpoint whose provider it does not know, or an OpenAI-compatible one without a URL, saying why, and keeps the others', () => {
      const typo = { name: 'claude', provider: 'antropic', models: [{ id: 'claude-sonnet-4-5' }] };
      const noUrl = { name: 'bare', models: [{ id: 'm' }] };
      const { settings, problems } = read({ 'longrun.endpoints': [typo, noUrl, ollama] });
      assert.deepEqual(
        settings.endpoints.map((e) => e.name),
        ['ollama'],
      );
      assert.deepEqual(
        problems.map((p) => p.message),
        [
          'entry 1 ("claude"): provider must be one of "openai-compatible", "openai", "anthropic", "google", "openrouter"',
          'entry 2 ("bare"): baseUrl is missing: an OpenAI-compatible endpoint needs its server\'s URL (e.g. http://localhost:11434/v1), or a "provider" (openai, anthropic, google, openrouter)',
        ],
      );
      assert.deepEqual(
        problems.map((p) => p.value),
        [typo, noUrl],
        'the entries as written, for the message',
      );
    });
  });
});

describe('settings: package.json declares what readSettings reads', () => {
  interface Property {
    type?: string | string[];
    default?: unknown;
    enum?: unknown[];
    minimum?: number;
    maximum?: number;
    exclusiveMinimum?: number;
    description?: string;
    markdownDescription?: string;
  }
  const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as {
    contributes?: { configuration?: { properties?: Record<string, Property> } | Array<{ properties?: Record<string, Property> }> };
  };
  const sections = pkg.contributes?.configuration;
  const declared: Record<string, Property> = Object.assign({}, ...(Array.isArray(sections) ? sections : [sections]).map((s) => s?.properties ?? {}));
  const declaredDefaults = Object.fromEntries(Object.entries(declared).map(([key, p]) => [key, p.default]));

  it('reads exactly the keys of settingDefaults', () => {
    const seen = new Set<string>();
    readSettings((key) => {
      seen.add(`longrun.${key}`);
      return undefined;
    });
    // And the old keys of renamed settings, which are no longer declared.
    const former = Object.keys(RENAMED_SETTINGS).map((key) => `longrun.${key}`);
    assert.deepEqual([...seen].sort(), [...Object.keys(settingDefaults()), ...former].sort());
    for (const key of former) assert.equal(declared[key], undefined, `${key} is no longer declared`);
  });

  it('declares every key read, with the same default, and nothing else', () => {
    assert.deepEqual(Object.keys(declared).sort(), Object.keys(settingDefaults()).sort());
    for (const [key, value] of Object.entries(settingDefaults())) {
      assert.deepEqual(declared[key]?.default, value, `default of ${key}`);
      assert.ok(declared[key]?.description || declared[key]?.markdownDescription, `${key} has a description`);
    }
  });

  it('gives the default settings, without a problem, when VS Code returns the declared defaults', () => {
    const fromPackage = read(declaredDefaults);
    assert.deepEqual(fromPackage.problems, []);
    assert.deepEqual(fromPackage.settings, readSettings(() => undefined).settings);
  });

  it("declares an endpoint's provider as the kinds the reader knows, and a base URL only the OpenAI-compatible kind needs", () => {
    const endpoints = declared['longrun.endpoints'] as Property & {
      items: { required: string[]; properties: { provider: { enum: string[]; default: string } } };
    };
    assert.deepEqual(endpoints.items.properties.provider.enum, [...PROVIDER_KINDS]);
    assert.equal(endpoints.items.properties.provider.default, DEFAULT_PROVIDER_KIND);
    assert.deepEqual(endpoints.items.required, ['name']);
    for (const provider of PROVIDER_KINDS) {
      const entry = { name: 'e', provider, baseUrl: 'http://127.0.0.1:1/v1', models: [{ id: 'm' }] };
      assert.deepEqual(read({ 'longrun.endpoints': [entry] }).problems, [], provider);
    }
  });

  it('accepts every declared enum value and bound, and rejects just past each bound', () => {
    // Levels at 0 and 1, so that either may take any value in between without crossing the other.
    const base = { ...declaredDefaults, 'longrun.compaction.warningThreshold': 0, 'longrun.compaction.criticalThreshold': 1 };
    for (const [key, p] of Object.entries(declared)) {
      const accepts = (value: unknown) => assert.deepEqual(read({ ...base, [key]: value }).problems, [], `${key} = ${JSON.stringify(value)}`);
      const rejects = (value: unknown) => {
        const problems = read({ ...base, [key]: value }).problems;
        assert.deepEqual(
          problems.map((x) => x.setting),
          [key],
          `${key} = ${JSON.stringify(value)}`,
        );
      };
      const step = p.type === 'integer' ? 1 : 0.5;
      for (const value of p.enum ?? []) accepts(value);
      if (p.enum) rejects('not-an-option');
      if (p.minimum !== undefined) {
        accepts(p.minimum);
        rejects(p.minimum - step);
      }
      if (p.maximum !== undefined) {
        accepts(p.maximum);
        rejects(p.maximum + step);
      }
      if (p.exclusiveMinimum !== undefined) rejects(p.exclusiveMinimum);
      if (p.type === 'integer') rejects((p.default as number) + 0.5);
    }
  });
});

describe('settings: a repository cannot turn Longrun against its user', () => {
  /**
   * Settings a workspace must not set, and why. A workspace sets settings through a folder's
   * `.vscode/settings.json` or a `.code-workspace` file, both of which come with a repository.
   * VS Code ignores workspace and folder values of `application` and `machine` settings only;
   * `window` (the scope of a setting that declares none), `resource`, `language-overridable` and
   * `machine-overridable` all take a workspace's value.
   */
  const USER_ONLY: Record<string, string> = {
    'longrun.endpoints': 'the URLs the conversation (and the stored API key) is sent to',
    'longrun.telemetry.otlpEndpoint': 'where traces, which name files and tools, are sent',
    'longrun.telemetry.enabled': 'turns sending traces on, to an endpoint the user once set up',
    'longrun.compaction.model': 'which model, perhaps of another provider, receives the whole conversation to summarize',
    'longrun.compaction.summary.customPrompt': "the summarizer's system prompt: its words end up in every summary the agent then reads as context",
    'longrun.agent.autoApproveEdits': 'lets the agent write files without asking',
    'longrun.agent.maxSteps': 'how many tool calls the agent makes unattended for one request',
    // A list is replaced, not merged: a workspace's value would drop the user's own globs.
    'longrun.agent.protectedPaths': 'the files the user wants to approve even when edits are auto-approved',
    'longrun.agent.allowedCommands': 'the commands the agent runs in a terminal without asking',
    'longrun.agent.commandTimeoutSeconds': 'how long a command the agent started runs unattended',
    'longrun.agent.editorTools': "which other extensions' and MCP servers' tools the agent may call",
    'longrun.logging.verbose': 'puts conversation content, secrets included, into log files',
    'longrun.models.overrides':
      'the prices and windows Longrun believes: costs shown smaller than billed, or a window that makes it compact at every step',
    'longrun.cache.ttl': 'how long the provider keeps the conversation cached, at twice the price of a write for an hour',
    'longrun.cache.openaiRetention': "how long OpenAI keeps the conversation's prefixes on its side",
    'longrun.skills.userFolders': "folders outside the workspace whose skills' text the agent is given as instructions",
    'longrun.subagent.model': 'which model, perhaps of another provider, receives the task and every file a subagent reads',
    'longrun.subagent.maxSteps': 'how many tool calls a subagent makes unattended',
    'longrun.subagent.maxTokens': 'how many tokens a subagent spends unattended',
  };

  /**
   * What a workspace may set: when and how compaction happens and how the gauge warns. None of it
   * changes where data goes, what a model is told to do, or what the agent may do unasked.
   */
  const workspaceMaySet = (key: string): boolean =>
    (key.startsWith('longrun.compaction.') ||
      key.startsWith('longrun.timeouts.') ||
      key === 'longrun.contextWindow' ||
      key === 'longrun.cache.coldCompaction') &&
    !(key in USER_ONLY);

  const pkg = JSON.parse(readFileSync(path.join(__dirname, '../../../package.json'), 'utf8')) as {
    contributes: { configuration: Array<{ properties: Record<string, { scope?: string }> }> };
  };
  const declared: Record<string, { scope?: string }> = Object.assign({}, ...pkg.contributes.configuration.map((s) => s.properties));

  it('gives every security-relevant setting a scope a workspace cannot set', () => {
    for (const [key, why] of Object.entries(USER_ONLY)) {
      assert.ok(key in declared, `${key} is declared`);
      const scope = declared[key]?.scope ?? 'window (the default)';
      assert.ok(scope === 'application' || scope === 'machine', `${key} is "${scope}", so a workspace could set ${why}`);
    }
  });

  it('decides for every longrun.* setting whether a workspace may set it', () => {
    const undecided = Object.keys(declared).filter((key) => !(key in USER_ONLY) && !workspaceMaySet(key));
    assert.deepEqual(undecided, [], 'new settings must be added to USER_ONLY or allowed for workspaces on purpose');
  });
});

describe('settings: the keep list, the summary template and the oldest half', () => {
  it('maps them onto the core configuration', () => {
    const { settings, problems } = read({
      'longrun.compaction.keepRecent.mode': 'half',
      'longrun.compaction.summary.progressSection': true,
      'longrun.compaction.summary.factsSections': true,
      'longrun.compaction.importance.keepThreshold': 8.5,
      'longrun.compaction.importance.keepBudgetTokens': 1_200,
      'longrun.compaction.importance.keepToolResults': true,
    });
    assert.deepEqual(problems, []);
    assert.equal(settings.compaction.keepRecent.mode, 'half');
    assert.equal(settings.compaction.summary.progressSection, true);
    assert.equal(settings.compaction.summary.factsSections, true);
    assert.deepEqual(
      [settings.compaction.importance.keepThreshold, settings.compaction.importance.keepBudgetTokens, settings.compaction.importance.keepToolResults],
      [8.5, 1_200, true],
    );
  });

  it('reports each invalid value once, naming the setting and the value used instead', () => {
    const { settings, problems } = read({
      'longrun.compaction.keepRecent.mode': 'quarter',
      'longrun.compaction.summary.progressSection': 'yes',
      'longrun.compaction.importance.keepBudgetTokens': -5,
      'longrun.compaction.importance.keepToolResults': 1,
    });
    assert.deepEqual(problems.map(formatProblem), [
      'Longrun: "longrun.compaction.keepRecent.mode" is "quarter", which is not valid (must be one of "tokens", "messages", "half"); using "tokens" instead.',
      'Longrun: "longrun.compaction.summary.progressSection" is "yes", which is not valid (must be true or false); using false instead.',
      'Longrun: "longrun.compaction.importance.keepBudgetTokens" is -5, which is not valid (must be at least 0); using 400 instead.',
      'Longrun: "longrun.compaction.importance.keepToolResults" is 1, which is not valid (must be true or false); using false instead.',
    ]);
    assert.equal(settings.compaction.importance.keepBudgetTokens, 400);
  });
});
