/**
 * The shared sample the prior ratios are measured on: what Longrun's own tools answer over the
 * bench's generated workspace, and a summary's English prose. Deterministic: the same text each time.
 */
import { BenchWorkspace } from '../../bench/agentic-workspace';
import { summaryText } from '../../bench/agent-session';
import { createAgentTools } from '../../src/llm/agent-tools';

type Execute = (input: unknown, options: { toolCallId: string; messages: []; abortSignal: AbortSignal }) => Promise<unknown>;

export async function sampleText(): Promise<string> {
  const workspace = new BenchWorkspace(11);
  const tools = createAgentTools(workspace, { readOnly: false, commands: workspace, maxResultChars: 20_000 });
  const call = async (name: string, input: unknown): Promise<string> =>
    String(
      await (tools[name]!.execute as unknown as Execute)(input, { toolCallId: 'sample', messages: [], abortSignal: new AbortController().signal }),
    );
  const paths = workspace.paths();
  const parts: string[] = [];
  for (const path of paths.filter((_, i) => i % 8 === 0)) parts.push(await call('read_file', { path }));
  parts.push(await call('search_text', { query: 'timeoutMs', limit: 80 }));
  parts.push(await call('list_files', { glob: 'src/**' }));
  parts.push(await call('run_command', { command: 'npm test' }));
  parts.push(await call('run_command', { command: 'npx tsc --noEmit' }));
  const edited = paths[3]!;
  const line = workspace.editableLine(edited, () => 0.5)!;
  parts.push(
    await call('edit_file', { path: edited, edits: [{ oldText: line, newText: line.replace('timeoutMs', 'timeoutMs: 9000, previousTimeoutMs') }] }),
  );
  parts.push(await call('run_command', { command: 'git diff' }));
  const prose = summaryText({
    system: '',
    messages: Array.from({ length: 12 }, () => ({ role: 'user' as const, content: '' })),
    maxOutputTokens: 1_000,
    temperature: 0,
    purpose: 'summary',
  });
  parts.push(
    prose,
    'Read the jobs and storage modules, find why the retry logic fails under load, fix it and run the tests. Never change the public API of src/api.',
  );
  return parts.join('\n\n');
}
