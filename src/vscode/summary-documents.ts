import * as vscode from 'vscode';
import type { CompactionEntry } from '../core/history';
import type { MessageTokenCounter } from '../core/message-tokens';
import type { Conversation } from '../app/conversation/conversation';
import { compactionIdOf, editSummary, savedSummary, summaryDocument, summaryOf, type SummaryState } from '../app/compaction/summary-edit';
import { workStateOf } from '../core/work-state';
import { COMMAND, SUMMARY_SCHEME } from '../app/contributions';
import type { CommandHandler } from './entry-points';

/**
 * Compaction summaries as editable documents, `longrun-summary:/<conversation>/<compaction>.md`,
 * served by a file system provider so that VS Code's own Save hands the text to Longrun (an
 * untitled document would ask where to save it). Reading gives the summary as it stands; saving
 * gives the model that text (see `summary-edit.ts`):
 *
 * - a preview (`preview`), a compaction computed but not applied: saving applies it with the saved
 *   summary; closing it without saving applies nothing;
 * - the summary in force: saving appends an edit, which Undo takes back first;
 * - any other (compacted again since, undone, a preview not applied): read-only.
 */

/**
 * The document of compaction `compactionId`'s summary in conversation `conversationId`: its name
 * (what the editor's tab shows) says which round it is; the ids before it say whose.
 */
export function summaryUri(conversationId: string, compactionId: string, round: number): vscode.Uri {
  return vscode.Uri.from({ scheme: SUMMARY_SCHEME, path: `/${conversationId}/${compactionId}/summary-round-${round}.md` });
}

function parseUri(uri: vscode.Uri): { readonly conversationId: string; readonly compactionId: string } | undefined {
  const match = /^\/([A-Za-z0-9_-]+)\/([^/]+)\/[^/]+\.md$/.exec(uri.path);
  return match ? { conversationId: match[1]!, compactionId: match[2]! } : undefined;
}

const keyOf = (conversationId: string, compactionId: string): string => `${conversationId}/${compactionId}`;

/** What the documents need of the rest of the extension. */
export interface SummaryDocumentsDeps {
  /** Conversation `id`, loaded when need be, without making it the current one. */
  readonly conversation: (id: string) => Promise<Conversation | undefined>;
  /** The conversation of the chat used last. */
  readonly current: () => Promise<Conversation | undefined>;
  readonly newId: () => string;
  /** The token counter of the model in use, for the count after an edited summary. */
  readonly counter: () => MessageTokenCounter;
  readonly now: () => number;
  readonly log: vscode.LogOutputChannel;
}

/** A computed compaction shown before it is applied. */
interface Preview {
  readonly uri: vscode.Uri;
  readonly entry: CompactionEntry;
  /** `open` while it waits for the user; `saved` from a save until it is applied (or refused); then `ended`. */
  state: 'open' | 'saved' | 'ended';
  /** The summary saved, file lists put back. */
  saved?: string;
  /** Ends the wait with the summary to apply, or undefined for none. */
  readonly settle: (summary: string | undefined) => void;
}

/** How long a saved text stands in for the document's content if the editor never says the save is done. */
const PIN_MS = 2_000;

export class SummaryDocuments implements vscode.FileSystemProvider, vscode.Disposable {
  private readonly changes = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changes.event;
  /** By conversation and compaction (`keyOf`). */
  private readonly previews = new Map<string, Preview>();
  /**
   * The text each document was last given and its modification time. The time moves only when the
   * text does: the editor reloads a document when told it changed and its time moved.
   */
  private readonly served = new Map<string, { text: string; mtime: number }>();
  /**
   * The text just saved, given as the content until the editor has finished the save (it takes the
   * content's time right after writing, and reloads only a document that is not dirty); then the
   * content as Longrun stores it (the file lists put back, the header saying what saving now does)
   * is announced as a change, and the editor reloads it.
   */
  private readonly pins = new Map<string, { text: string; release: () => void }>();
  /** Conversations watched for compactions and undos, which change what their documents show. */
  private readonly watched = new Map<string, { dispose(): void; lastId: string | undefined }>();
  private readonly subscriptions: vscode.Disposable[] = [];
  /** Saves run one after another, so two quick saves cannot both pass the check of what is in force. */
  private saving: Promise<unknown> = Promise.resolve();

  constructor(private readonly deps: SummaryDocumentsDeps) {
    this.subscriptions.push(
      this.changes,
      vscode.window.tabGroups.onDidChangeTabs((e) => this.tabsClosed(e.closed)),
      // Only a document no longer dirty is reloaded: the stored content is announced once the save is done.
      vscode.workspace.onDidSaveTextDocument((d) => {
        if (d.uri.scheme === SUMMARY_SCHEME) this.pins.get(d.uri.path)?.release();
      }),
    );
  }

  /**
   * Opens the summary of a compaction computed but not applied, for the user to read and edit.
   * Resolves with the summary to apply (as saved, file lists put back), or undefined when the
   * document was closed without saving or discarded, or `signal` aborted.
   */
  async preview(conversation: Conversation, entry: CompactionEntry, signal: AbortSignal): Promise<string | undefined> {
    const uri = summaryUri(conversation.id, entry.id, entry.round);
    const key = keyOf(conversation.id, entry.id);
    this.follow(conversation);
    const result = new Promise<string | undefined>((resolve) => {
      const onAbort = (): void => preview.settle(undefined);
      const preview: Preview = {
        uri,
        entry,
        state: 'open',
        settle: (summary) => {
          if (preview.state !== 'open') return;
          preview.state = summary === undefined ? 'ended' : 'saved';
          if (summary !== undefined) preview.saved = summary;
          signal.removeEventListener('abort', onAbort);
          this.deps.log.info(`Summary preview of round ${entry.round}: ${summary === undefined ? 'not applied' : 'applied as saved'}.`);
          resolve(summary);
          // The document now says whether it was applied.
          setTimeout(() => void this.refresh(uri), 0);
        },
      };
      this.previews.set(key, preview);
      if (signal.aborted) preview.settle(undefined);
      else signal.addEventListener('abort', onAbort, { once: true });
    });
    try {
      const document = await vscode.workspace.openTextDocument(uri);
      await vscode.window.showTextDocument(document, { preview: false });
    } catch (error) {
      this.deps.log.warn(`Could not open the summary preview: ${String(error)}`);
      this.previews.get(key)?.settle(undefined);
    }
    return result;
  }

  /** The compaction a preview was for has been applied, or refused: the document now shows which. */
  ended(conversationId: string, entryId: string): void {
    const preview = this.previews.get(keyOf(conversationId, entryId));
    if (!preview) return;
    preview.settle(undefined);
    preview.state = 'ended';
    void this.refresh(preview.uri);
  }

  /** Applies a preview as its editor shows it: saved first when edited, else as computed. */
  async accept(conversationId: string, entryId: string): Promise<boolean> {
    const preview = this.previews.get(keyOf(conversationId, entryId));
    if (preview?.state !== 'open') return false;
    const document = vscode.workspace.textDocuments.find((d) => d.uri.toString() === preview.uri.toString());
    if (document?.isDirty) return document.save();
    preview.settle(preview.entry.summary);
    return true;
  }

  /** Ends a preview without applying it, and closes its editor unless it holds unsaved edits. */
  async discard(conversationId: string, entryId: string): Promise<boolean> {
    const preview = this.previews.get(keyOf(conversationId, entryId));
    if (preview?.state !== 'open') return false;
    preview.settle(undefined);
    const tabs = tabsOf(preview.uri).filter((tab) => !tab.isDirty);
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs);
    return true;
  }

  /**
   * Opens the summary of a compaction for editing ("Edit summary"): the one named, else the latest
   * of the conversation named, else of the current conversation. Resolves with the compaction's id.
   */
  async openForEdit(conversationId?: unknown, compactionId?: unknown): Promise<string | undefined> {
    const conversation = typeof conversationId === 'string' ? await this.deps.conversation(conversationId) : await this.deps.current();
    const last = conversation?.lastCompaction();
    const target = typeof compactionId === 'string' ? compactionId : last && compactionIdOf(last);
    const entry =
      conversation && target !== undefined
        ? (summaryOf(conversation.log(), target)?.entry ?? this.previews.get(keyOf(conversation.id, target))?.entry)
        : undefined;
    if (!conversation || target === undefined || !entry) {
      void vscode.window.showInformationMessage('Longrun: this conversation has not been compacted, so there is no summary to edit.');
      return undefined;
    }
    this.follow(conversation);
    const document = await vscode.workspace.openTextDocument(summaryUri(conversation.id, target, entry.round));
    await vscode.window.showTextDocument(document, { preview: false });
    return target;
  }

  // ---------------------------------------------------------------------------------------------
  // The file system.

  watch(): vscode.Disposable {
    // Changes are announced as they happen (see `refresh`); nothing to set up per document.
    return new vscode.Disposable(() => undefined);
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const pin = this.pins.get(uri.path);
    const { text, state } = pin ? { text: pin.text, state: 'in-force' as const } : await this.content(uri);
    const { mtime } = this.serve(uri, text);
    const readonly = state === 'replaced' || state === 'discarded';
    return {
      type: vscode.FileType.File,
      ctime: 0,
      mtime,
      size: Buffer.byteLength(text),
      ...(readonly ? { permissions: vscode.FilePermission.Readonly } : {}),
    };
  }

  async readFile(uri: vscode.Uri): Promise<Uint8Array> {
    const pin = this.pins.get(uri.path);
    const text = pin ? pin.text : (await this.content(uri)).text;
    this.serve(uri, text);
    return Buffer.from(text, 'utf8');
  }

  writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const text = Buffer.from(content).toString('utf8');
    const run = this.saving.then(() => this.save(uri, text));
    this.saving = run.catch(() => undefined);
    return run;
  }

  readDirectory(): Array<[string, vscode.FileType]> {
    return [];
  }

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(uri);
  }

  dispose(): void {
    for (const preview of this.previews.values()) preview.settle(undefined);
    for (const pin of this.pins.values()) pin.release();
    for (const watcher of this.watched.values()) watcher.dispose();
    for (const subscription of this.subscriptions) subscription.dispose();
  }

  // ---------------------------------------------------------------------------------------------

  private async save(uri: vscode.Uri, text: string): Promise<void> {
    const ref = parseUri(uri);
    if (!ref) throw vscode.FileSystemError.FileNotFound(uri);
    const preview = this.previews.get(keyOf(ref.conversationId, ref.compactionId));
    if (preview?.state === 'open') {
      const saved = savedSummary(text, preview.entry.fileOperations, workStateOf(preview.entry.summary));
      if ('error' in saved) throw vscode.FileSystemError.NoPermissions(saved.error);
      this.pin(uri, text);
      preview.settle(saved.summary);
      return;
    }
    const conversation = await this.deps.conversation(ref.conversationId);
    if (!conversation) throw vscode.FileSystemError.FileNotFound(uri);
    if (!summaryOf(conversation.log(), ref.compactionId)) {
      throw vscode.FileSystemError.NoPermissions(
        'This summary was not applied (its preview was closed without saving, or its request stopped), so saving it changes nothing.',
      );
    }
    const result = await editSummary(conversation, ref.compactionId, text, { newId: this.deps.newId, counter: this.deps.counter() });
    if (!result.ok) throw vscode.FileSystemError.NoPermissions(result.reason);
    if (result.entry) this.deps.log.info(`The summary of compaction round ${result.entry.round} was edited and saved (entry ${result.entry.id}).`);
    this.pin(uri, text);
  }

  /** Gives `text` as the content until the editor has finished the save (or `PIN_MS` passed). */
  private pin(uri: vscode.Uri, text: string): void {
    this.pins.get(uri.path)?.release();
    this.serve(uri, text);
    let released = false;
    const timer = setTimeout(() => release(), PIN_MS);
    const release = (): void => {
      if (released) return;
      released = true;
      clearTimeout(timer);
      this.pins.delete(uri.path);
      setTimeout(() => void this.refresh(uri), 0);
    };
    this.pins.set(uri.path, { text, release });
  }

  /** The document's content and state as the conversation (or the preview) has it now. */
  private async content(uri: vscode.Uri): Promise<{ readonly text: string; readonly state: SummaryState }> {
    const ref = parseUri(uri);
    if (!ref) throw vscode.FileSystemError.FileNotFound(uri);
    const conversation = await this.deps.conversation(ref.conversationId);
    if (conversation) this.follow(conversation);
    const found = conversation && summaryOf(conversation.log(), ref.compactionId);
    if (found) {
      const state = found.inForce ? 'in-force' : 'replaced';
      return { text: summaryDocument(found.entry, state), state };
    }
    const preview = this.previews.get(keyOf(ref.conversationId, ref.compactionId));
    // Saved, and about to join the log: shown as it will be once it has.
    if (preview?.state === 'saved' && preview.saved !== undefined)
      return { text: summaryDocument({ ...preview.entry, summary: preview.saved }, 'in-force'), state: 'in-force' };
    if (preview) {
      const state = preview.state === 'open' ? 'preview' : 'discarded';
      return { text: summaryDocument(preview.entry, state), state };
    }
    throw vscode.FileSystemError.FileNotFound(uri);
  }

  /** Records the text a document is given, moving its time when the text changed. */
  private serve(uri: vscode.Uri, text: string): { text: string; mtime: number } {
    const before = this.served.get(uri.path);
    if (before?.text === text) return before;
    const served = { text, mtime: Math.max(this.deps.now(), (before?.mtime ?? 0) + 1) };
    this.served.set(uri.path, served);
    return served;
  }

  /** Tells the editor that the document changed, when its content did. */
  private async refresh(uri: vscode.Uri): Promise<void> {
    if (this.pins.has(uri.path)) return;
    try {
      const { text } = await this.content(uri);
      if (this.served.get(uri.path)?.text === text) return;
      this.serve(uri, text);
      this.changes.fire([{ type: vscode.FileChangeType.Changed, uri }]);
    } catch {
      // Gone (a conversation deleted): the editor finds out when it reads it.
    }
  }

  /** Refreshes the open documents of a conversation when a compaction or an undo changes what they show. */
  private follow(conversation: Conversation): void {
    if (this.watched.has(conversation.id)) return;
    const watcher = {
      lastId: conversation.lastCompaction()?.id,
      dispose: () => undefined as void,
    };
    const subscription = conversation.onDidChange(() => {
      // Every append lands here: only a change of the summary in force changes a document.
      const lastId = conversation.lastCompaction()?.id;
      if (lastId === watcher.lastId) return;
      watcher.lastId = lastId;
      for (const document of vscode.workspace.textDocuments) {
        if (document.uri.scheme === SUMMARY_SCHEME && parseUri(document.uri)?.conversationId === conversation.id) void this.refresh(document.uri);
      }
    });
    watcher.dispose = () => subscription.dispose();
    this.watched.set(conversation.id, watcher);
  }

  /** A preview whose last editor closed without a save applies nothing. */
  private tabsClosed(closed: readonly vscode.Tab[]): void {
    for (const tab of closed) {
      if (!(tab.input instanceof vscode.TabInputText) || tab.input.uri.scheme !== SUMMARY_SCHEME) continue;
      const uri = tab.input.uri;
      const ref = parseUri(uri);
      const key = ref && keyOf(ref.conversationId, ref.compactionId);
      const preview = key === undefined ? undefined : this.previews.get(key);
      if (!preview || key === undefined || tabsOf(uri).length > 0) continue;
      if (preview.state === 'open') preview.settle(undefined);
      else if (preview.state === 'ended') this.previews.delete(key);
    }
  }
}

function tabsOf(uri: vscode.Uri): vscode.Tab[] {
  return vscode.window.tabGroups.all
    .flatMap((g) => g.tabs)
    .filter((t) => t.input instanceof vscode.TabInputText && t.input.uri.toString() === uri.toString());
}

/** The "Edit summary" command (Edit Compaction Summary, and the chat's "Edit summary" button). */
export function editSummaryCommand(documents: SummaryDocuments): [string, CommandHandler] {
  return [COMMAND.editSummary, (conversationId?: unknown, compactionId?: unknown) => documents.openForEdit(conversationId, compactionId)];
}
