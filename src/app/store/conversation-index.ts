import { z } from 'zod';
import { lazily } from '../../core/lazy';
import { isRecord } from '../../core/errors';
import type { CompactionReason } from '../../core/history';
import { INDEX_KEY } from '../contributions';
import { countSchema, describeIssues, reasonSchema } from './schemas';

// ---------------------------------------------------------------------------------------------
// The index of conversations and their summaries, kept in VS Code's workspace state.

/** The part of VS Code's `Memento` the index uses (its `Thenable` is a `PromiseLike`). */
export interface MementoLike {
  get<T>(key: string): T | undefined;
  update(key: string, value: unknown): PromiseLike<void>;
}

/** One conversation as listed to the user. */
export interface ConversationInfo {
  readonly id: string;
  readonly title: string;
  /** Milliseconds since the epoch. */
  readonly createdAt: number;
  readonly updatedAt: number;
}

/**
 * What the index keeps of a compaction summary: the figures the list of conversations reads (how
 * many compactions a conversation has), not its text, which lives in the conversation file with the
 * full entry. Entries saved with the text read as before; it is dropped when the list is next saved.
 * A Longrun from before this leaves out entries without the text as unreadable, so its list of
 * conversations counts fewer compactions; the conversations themselves are unaffected.
 */
export interface StoredSummary {
  /** The compaction entry it belongs to. */
  readonly entryId: string;
  readonly round: number;
  readonly reason: CompactionReason;
  readonly tokensBefore: number;
  readonly tokensAfter: number;
  readonly createdAt: number;
  readonly fallback: boolean;
}

const conversationInfoSchema = lazily(() =>
  z.object({
    id: z.string().min(1),
    title: z.string(),
    createdAt: z.number(),
    updatedAt: z.number(),
  }),
);

const storedSummarySchema = lazily(() =>
  z.object({
    entryId: z.string().min(1),
    round: z.number().int().min(1),
    reason: reasonSchema(),
    // Saved by earlier versions, never read: zod leaves the key out of what it gives back.
    tokensBefore: countSchema(),
    tokensAfter: countSchema(),
    createdAt: z.number(),
    fallback: z.boolean(),
  }),
);

const INDEX_VERSION = 1;
const indexSchema = lazily(() =>
  z.object({
    version: z.literal(INDEX_VERSION),
    current: z.string().optional(),
    conversations: z.array(z.unknown()),
  }),
);
const summariesSchema = lazily(() => z.object({ version: z.literal(INDEX_VERSION), summaries: z.array(z.unknown()) }));

/** The workspace-state key of one conversation's summaries. */
export const summariesKey = (id: string): string => `longrun.summaries.${id}`;

/**
 * The list of conversations, the current one, and each conversation's summaries. Values are read
 * once, validated, and cached; unreadable state counts as empty and is reported in `problems()`.
 */
export class ConversationIndex {
  private readonly reported: string[] = [];
  /** The stored list, read and checked on first use (not when the extension starts). */
  private loaded: { currentId: string | undefined; conversations: ConversationInfo[] } | undefined;
  private readonly summaryCache = new Map<string, StoredSummary[]>();

  constructor(private readonly state: MementoLike) {}

  private get index(): { currentId: string | undefined; conversations: ConversationInfo[] } {
    return (this.loaded ??= this.readIndex());
  }

  private readIndex(): { currentId: string | undefined; conversations: ConversationInfo[] } {
    const stored = this.readList(INDEX_KEY, indexSchema(), 'the list of Longrun conversations');
    const conversations = this.validItems(stored?.conversations ?? [], conversationInfoSchema(), 'conversation', (c) => c.id);
    return { currentId: stored?.current, conversations };
  }

  /** The conversation the chat continues, if any. */
  current(): string | undefined {
    return this.index.currentId;
  }

  async setCurrent(id: string | undefined): Promise<void> {
    this.index.currentId = id;
    await this.saveIndex();
  }

  /** Conversations, most recently updated first. */
  list(): ConversationInfo[] {
    return [...this.index.conversations].sort((a, b) => b.updatedAt - a.updatedAt);
  }

  /** Adds a conversation or replaces the one with the same id. */
  async upsert(info: ConversationInfo): Promise<void> {
    const item = conversationInfoSchema().parse(info);
    const at = this.index.conversations.findIndex((c) => c.id === item.id);
    this.index.conversations = at < 0 ? [...this.index.conversations, item] : this.index.conversations.map((c, i) => (i === at ? item : c));
    await this.saveIndex();
  }

  /** A conversation's summaries, in the order they were added. */
  summaries(id: string): StoredSummary[] {
    return [...this.loadSummaries(id)];
  }

  /** Adds a summary, or replaces the one for the same compaction entry. */
  async addSummary(id: string, summary: StoredSummary): Promise<void> {
    const item = storedSummarySchema().parse(summary);
    const list = this.loadSummaries(id);
    const at = list.findIndex((s) => s.entryId === item.entryId);
    await this.saveSummaries(id, at < 0 ? [...list, item] : list.map((s, i) => (i === at ? item : s)));
  }

  async removeSummary(id: string, entryId: string): Promise<void> {
    await this.saveSummaries(
      id,
      this.loadSummaries(id).filter((s) => s.entryId !== entryId),
    );
  }

  /** What could not be read back from the stored state, one sentence each. */
  problems(): string[] {
    this.loaded ??= this.readIndex();
    return [...this.reported];
  }

  private loadSummaries(id: string): StoredSummary[] {
    let list = this.summaryCache.get(id);
    if (!list) {
      const stored = this.readList(summariesKey(id), summariesSchema(), `the summaries of conversation "${id}"`);
      list = this.validItems(stored?.summaries ?? [], storedSummarySchema(), `summary of conversation "${id}"`, (s) => s.entryId);
      this.summaryCache.set(id, list);
    }
    return list;
  }

  private async saveSummaries(id: string, list: StoredSummary[]): Promise<void> {
    this.summaryCache.set(id, list);
    await this.state.update(summariesKey(id), { version: INDEX_VERSION, summaries: list });
  }

  private async saveIndex(): Promise<void> {
    await this.state.update(INDEX_KEY, {
      version: INDEX_VERSION,
      ...(this.index.currentId !== undefined ? { current: this.index.currentId } : {}),
      conversations: this.index.conversations,
    });
  }

  private readList<T>(key: string, schema: z.ZodType<T>, what: string): T | undefined {
    const raw = this.state.get<unknown>(key);
    if (raw === undefined) return undefined;
    const parsed = schema.safeParse(raw);
    if (parsed.success) return parsed.data;
    const version = isRecord(raw) ? raw.version : undefined;
    const why =
      typeof version === 'number' && version > INDEX_VERSION
        ? `it was saved by a newer version of Longrun (version ${version})`
        : describeIssues(parsed.error);
    this.reported.push(`Longrun could not read ${what} from the workspace state (${why}); treating it as empty.`);
    return undefined;
  }

  private validItems<T>(items: readonly unknown[], schema: z.ZodType<T>, what: string, idOf: (item: T) => string): T[] {
    const out: T[] = [];
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const parsed = schema.safeParse(item);
      if (!parsed.success) {
        this.reported.push(`Longrun left out stored ${what} number ${index + 1}, which is unreadable (${describeIssues(parsed.error)}).`);
        return;
      }
      const key = idOf(parsed.data);
      if (seen.has(key)) {
        this.reported.push(`Longrun left out stored ${what} number ${index + 1}, a duplicate of "${key}".`);
        return;
      }
      seen.add(key);
      out.push(parsed.data);
    });
    return out;
  }
}
