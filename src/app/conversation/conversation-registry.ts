import { Conversation, ConversationRecords, NEW_TITLE, type ConversationDeps } from './conversation';
import type { ConversationIndex } from '../store/conversation-index';
import type { ConversationStore } from '../store/conversation-store';
import type { Clock } from '../../core/ports';
import { errorText } from '../../core/errors';

/**
 * The conversations a window has loaded, and the one of the chat used last (the gauge, /context,
 * Undo and "Compact Conversation" act on it). A conversation branches like its chat (see
 * `src/core/branches.ts`): each branch a chat continues is a {@link Conversation} of its own, at
 * its leaf turn, sharing the records read from disk with the conversation's other branches. Free of
 * `vscode`: the editor's session hands it the store, the index and how to report problems.
 */

export interface RegistryDeps {
  readonly store: ConversationStore;
  readonly index: ConversationIndex;
  readonly clock: Clock;
  readonly newId: () => string;
  /** What each conversation object needs (the model, the summarizer, settings). */
  readonly conversationDeps: () => ConversationDeps;
  /** A problem: logged, and shown to the user when `show` (a damaged line kept aside). */
  readonly warn: (message: string, show: boolean) => void;
  /** A conversation that could not be read. */
  readonly error: (message: string) => void;
  /** Written to the log only. */
  readonly info: (message: string) => void;
  /** The current conversation changed, or its content did. */
  readonly changed: () => void;
}

/** Most branches of one conversation kept loaded; the least recently used idle one goes first. */
const MAX_BRANCHES = 8;

interface Loaded {
  readonly records: ConversationRecords;
  /** The loaded branches, least recently used first. */
  readonly branches: Conversation[];
  readonly subscriptions: Map<Conversation, { dispose(): void }>;
  /** To the records finding their files changed. */
  readonly changed: { dispose(): void };
}

export class ConversationRegistry {
  private currentBranch: Conversation | undefined;
  private opening: Promise<Conversation | undefined> | undefined;
  private readonly loaded = new Map<string, Loaded>();
  private readonly loading = new Map<string, Promise<Loaded | undefined>>();
  /** Conversations whose files did not hold what was read from them: their next reading checks every line. */
  private readonly checkWhole = new Set<string>();
  /** A conversation picked with "Open Conversation…", continued by the next new chat. */
  private pendingOpen: string | undefined;

  constructor(private readonly deps: RegistryDeps) {}

  /** The conversation of the chat used last, loaded from disk on first use; undefined when there is none. */
  current(): Promise<Conversation | undefined> {
    if (this.currentBranch) return Promise.resolve(this.currentBranch);
    this.opening ??= this.openCurrent().finally(() => {
      this.opening = undefined;
    });
    return this.opening;
  }

  currentIfLoaded(): Conversation | undefined {
    return this.currentBranch;
  }

  private async openCurrent(): Promise<Conversation | undefined> {
    for (const problem of this.deps.index.problems()) this.deps.warn(problem, false);
    const id = this.deps.index.current();
    return id ? this.open(id) : undefined;
  }

  /**
   * Makes conversation `id` the current one, on the branch used last in this window (or the turn
   * started last), loading it when this window has not yet; undefined when it cannot be read.
   */
  async open(id: string): Promise<Conversation | undefined> {
    const conversation = await this.find(id);
    if (conversation) await this.makeCurrent(conversation);
    return conversation;
  }

  /**
   * Conversation `id` on the branch used last in this window (or the turn started last), without
   * making it the current one: a summary document of another chat's conversation must not move the gauge.
   */
  async find(id: string): Promise<Conversation | undefined> {
    const loaded = await this.load(id);
    if (!loaded) return undefined;
    const conversation = loaded.branches.at(-1) ?? this.add(id, loaded, undefined);
    await conversation.loadView();
    return conversation;
  }

  /**
   * Conversation `id` on the branch whose leaf is `leaf` (null: the trunk), made the current one:
   * the branch a chat continues. A leaf no branch loaded here ends at is made into a new branch
   * from the records, leaving the others as they are (each chat keeps its own). Undefined when the
   * conversation cannot be read.
   */
  async branch(id: string, leaf: string | null): Promise<Conversation | undefined> {
    const loaded = await this.load(id);
    if (!loaded) return undefined;
    const known = loaded.branches.find((b) => b.leaf() === leaf);
    if (!known) this.cancelAheadBelow(loaded, leaf);
    const conversation = known ?? this.add(id, loaded, leaf);
    await conversation.loadView();
    await this.makeCurrent(conversation);
    return conversation;
  }

  /**
   * Conversation `id` on a branch whose path holds turn `turn`: the loaded one used last (a chat went
   * on from that turn), else one made at `turn`, without making it the current one. Undefined when
   * the conversation cannot be read or has no such turn.
   */
  async branchHolding(id: string, turn: string): Promise<Conversation | undefined> {
    const loaded = await this.load(id);
    const turns = loaded?.records.turns();
    if (!loaded || !turns?.has(turn)) return undefined;
    const holding = loaded.branches.findLast((b) => {
      const leaf = b.leaf();
      return leaf !== null && turns.path(leaf).turns.includes(turn);
    });
    const conversation = holding ?? this.add(id, loaded, turn);
    await conversation.loadView();
    return conversation;
  }

  /** Whether conversation `id` holds turn `turn` (loading it if need be). */
  async hasTurn(id: string, turn: string): Promise<boolean> {
    const loaded = await this.load(id);
    return loaded?.records.turns().has(turn) ?? false;
  }

  private async makeCurrent(conversation: Conversation): Promise<void> {
    const loaded = this.loaded.get(conversation.id);
    if (loaded) {
      // Most recently used last: the branch a later `find` gives.
      const at = loaded.branches.indexOf(conversation);
      if (at >= 0 && at !== loaded.branches.length - 1) loaded.branches.push(...loaded.branches.splice(at, 1));
    }
    if (this.currentBranch !== conversation) {
      this.currentBranch = conversation;
      this.deps.changed();
    }
    if (this.deps.index.current() !== conversation.id) await this.deps.index.setCurrent(conversation.id);
  }

  /**
   * A chat continuing from an earlier turn (a rewind, a retry, an edited request) leaves the branches
   * below that turn behind: the summaries being prepared for them may never be needed.
   */
  private cancelAheadBelow(loaded: Loaded, leaf: string | null): void {
    const below = new Set(loaded.records.turns().descendants(leaf));
    for (const branch of loaded.branches) {
      const tip = branch.leaf();
      if (tip !== null && below.has(tip)) branch.cancelAhead();
    }
  }

  private add(id: string, loaded: Loaded, leaf: string | null | undefined): Conversation {
    const conversation = new Conversation(id, [], this.deps.conversationDeps(), {
      records: loaded.records,
      ...(leaf !== undefined ? { leaf } : {}),
    });
    loaded.subscriptions.set(
      conversation,
      conversation.onDidChange(() => {
        if (conversation === this.currentBranch) this.deps.changed();
      }),
    );
    loaded.branches.push(conversation);
    this.evict(loaded);
    return conversation;
  }

  /** Drops the least recently used branches beyond the limit, but never one at work or the current one. */
  private evict(loaded: Loaded): void {
    for (let i = 0; loaded.branches.length > MAX_BRANCHES && i < loaded.branches.length - 1;) {
      const branch = loaded.branches[i]!;
      if (branch === this.currentBranch || branch.isCompacting()) {
        i++;
        continue;
      }
      branch.cancelAhead();
      loaded.subscriptions.get(branch)?.dispose();
      loaded.subscriptions.delete(branch);
      loaded.branches.splice(i, 1);
    }
  }

  private load(id: string): Promise<Loaded | undefined> {
    const known = this.loaded.get(id);
    if (known) return Promise.resolve(known);
    let pending = this.loading.get(id);
    if (!pending) {
      pending = this.read(id).finally(() => this.loading.delete(id));
      this.loading.set(id, pending);
    }
    return pending;
  }

  private async read(id: string): Promise<Loaded | undefined> {
    if (!(await this.deps.store.exists(id))) return undefined;
    try {
      // What only the archive holds stays on disk: a branch reads back what its view needs. Read again
      // because a line read back was not what the opening took it for, every line is checked.
      const checkAll = this.checkWhole.delete(id);
      const { log, problems, locations } = await this.deps.store.open(id, { holdAway: true, checkAll });
      for (const problem of problems) this.deps.warn(problem, true);
      // Another request may have loaded it meanwhile: one set of records per conversation.
      const known = this.loaded.get(id);
      if (known) return known;
      return this.loadedFrom(id, new ConversationRecords(log, undefined, locations));
    } catch (error) {
      this.deps.error(`Longrun could not open the saved conversation: ${errorText(error)}`);
      return undefined;
    }
  }

  /** Conversation `id` loaded as `records`, read again from disk when they find their files changed. */
  private loadedFrom(id: string, records: ConversationRecords): Loaded {
    const changed = records.onDidFindChanged(() => this.readAgain(id, records));
    const loaded: Loaded = { records, branches: [], subscriptions: new Map(), changed };
    this.loaded.set(id, loaded);
    return loaded;
  }

  /**
   * The files of conversation `id` turned out to have been changed by something else since `records`
   * were read from them: this window's copy is dropped at once (its branches write nothing more), and
   * the conversation is read again whole from disk, damaged lines set aside and reported as on any
   * opening. The current branch is made again on the records read, at the same turn when they hold it.
   */
  private readAgain(id: string, records: ConversationRecords): void {
    const loaded = this.loaded.get(id);
    if (loaded?.records !== records) return;
    this.loaded.delete(id);
    this.checkWhole.add(id);
    loaded.changed.dispose();
    for (const branch of loaded.branches) {
      branch.cancelAhead();
      loaded.subscriptions.get(branch)?.dispose();
    }
    const current = this.currentBranch;
    if (!current || !loaded.branches.includes(current)) return;
    this.currentBranch = undefined;
    this.deps.changed();
    void this.reopen(id, current.leaf()).catch((error: unknown) =>
      this.deps.error(`Longrun could not read the conversation again: ${errorText(error)}`),
    );
  }

  /** Makes conversation `id`, read again, the current one at turn `leaf` (the turn started last when it lacks it), unless another became current meanwhile. */
  private async reopen(id: string, leaf: string | null): Promise<void> {
    const loaded = await this.load(id);
    if (!loaded || this.currentBranch) return;
    const known = loaded.branches.find((b) => b.leaf() === leaf);
    const conversation = known ?? this.add(id, loaded, leaf === null || loaded.records.turns().has(leaf) ? leaf : undefined);
    await conversation.loadView();
    if (!this.currentBranch && this.loaded.get(id) === loaded) await this.makeCurrent(conversation);
  }

  /** Starts a new conversation and makes it the current one; the others stay on disk. */
  async startNew(): Promise<Conversation> {
    const id = this.deps.newId();
    await this.deps.store.create(id);
    const now = this.deps.clock.now();
    await this.deps.index.upsert({ id, title: NEW_TITLE, createdAt: now, updatedAt: now });
    const loaded = this.loadedFrom(id, new ConversationRecords([]));
    // A summary being prepared for the conversation left behind may never be needed.
    this.currentBranch?.cancelAhead();
    const conversation = this.add(id, loaded, null);
    await this.makeCurrent(conversation);
    this.deps.info(`Started conversation ${id}.`);
    return conversation;
  }

  /** Remembers a conversation picked to be continued by the next new chat. */
  continueInNextChat(id: string): void {
    this.pendingOpen = id;
  }

  /** The conversation a new chat continues, if one was picked; asked once. */
  takePendingOpen(): string | undefined {
    const id = this.pendingOpen;
    this.pendingOpen = undefined;
    return id;
  }

  /** This workspace's conversations, newest first, with what a picker shows of them. */
  async conversations(): Promise<Array<{ id: string; title: string; updatedAt: number; bytes: number; compactions: number }>> {
    const list = [...this.deps.index.list()].sort((a, b) => b.updatedAt - a.updatedAt);
    return Promise.all(
      list.map(async (info) => ({
        id: info.id,
        title: info.title,
        updatedAt: info.updatedAt,
        bytes: await this.deps.store.size(info.id).catch(() => 0),
        compactions: this.deps.index.summaries(info.id).length,
      })),
    );
  }

  dispose(): void {
    for (const loaded of this.loaded.values()) {
      loaded.changed.dispose();
      for (const subscription of loaded.subscriptions.values()) subscription.dispose();
    }
  }
}
