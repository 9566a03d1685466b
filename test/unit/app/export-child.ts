/**
 * Exports a stored conversation to Markdown and prints what it measured as one JSON line: run by
 * `conversation-export.test.ts` in a process of its own with a small heap, so that an export that
 * gathers the conversation in memory fails there.
 *
 * Usage: node --max-old-space-size=N --import tsx export-child.ts <storage dir> <conversation id> <file>
 */
import { ConversationStore } from '../../../src/app/store/conversation-store';
import { exportConversationToFile } from '../../../src/app/conversation/conversation-export';

async function main(): Promise<void> {
  const [dir, id, file] = process.argv.slice(2) as [string, string, string];
  const store = new ConversationStore(dir, () => Date.now());
  let peakRss = process.memoryUsage().rss;
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
  const started = Date.now();
  const bytes = await exportConversationToFile((onRecord) => store.readRecords(id, onRecord), 'A very long conversation', file);
  clearInterval(sampler);
  peakRss = Math.max(peakRss, process.memoryUsage().rss);
  process.stdout.write(`${JSON.stringify({ bytes, peakRss, ms: Date.now() - started })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
