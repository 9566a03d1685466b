import { COMMAND } from '../app/contributions';
import * as vscode from 'vscode';
import type { GaugeItem } from './gauge-item';
import type { Session } from './session';
import type { ConversationRegistry } from '../app/conversation/conversation-registry';
import type { LongrunSettings } from '../app/settings';
import { gaugePresentation, noConversationPresentation, type GaugePresentation } from '../app/report/gauge-text';

/** What the gauge reads. */
export interface GaugeDeps {
  /** The status-bar item, made (and disposed of) by the extension's entry point. */
  readonly item: GaugeItem;
  /** The model in use. */
  readonly session: Session;
  /** The conversation of the chat used last. */
  readonly registry: ConversationRegistry;
  readonly settings: () => LongrunSettings;
  readonly now: () => number;
  /** Calls `fn` after `ms` (the clock's timer), to say when the provider's cache expires. */
  readonly setTimer?: (ms: number, fn: () => void) => () => void;
}

/**
 * The status-bar gauge: how full the model's context window is. Clicking it compacts. At the
 * warning level it offers, once per conversation, to compact, so the user can choose when it happens.
 */
export class ContextGauge {
  private warned = new Set<string>();
  private presentation: GaugePresentation = noConversationPresentation();
  /** Cancels the timer that shows the cache's expiry when it comes. */
  private cancelExpiry: (() => void) | undefined;

  private readonly setTimer: (ms: number, fn: () => void) => () => void;

  constructor(private readonly deps: GaugeDeps) {
    this.setTimer =
      deps.setTimer ??
      ((ms, fn) => {
        const handle = setTimeout(fn, ms);
        return () => clearTimeout(handle);
      });
  }

  /** Stops the timer that waits for the cache's expiry. */
  dispose(): void {
    this.cancelExpiry?.();
    this.cancelExpiry = undefined;
  }

  /** What the gauge shows now (for tests and the "Show Context Usage" command). */
  current(): GaugePresentation {
    return this.presentation;
  }

  update(): void {
    this.cancelExpiry?.();
    this.cancelExpiry = undefined;
    const conversation = this.deps.registry.currentIfLoaded();
    if (!conversation || conversation.isEmpty()) {
      this.presentation = noConversationPresentation();
    } else {
      const count = conversation.count();
      const step = conversation.lastStep();
      const name = this.deps.session.modelName();
      const usage = this.deps.session.usageView(conversation);
      this.presentation = gaugePresentation({
        assessment: conversation.assess(),
        breakdown: conversation.breakdown(),
        source: count.source,
        now: this.deps.now(),
        usage,
        ...(step?.compaction ? { lastCompaction: step.compaction } : {}),
        ...(step?.pruning ? { lastPruning: step.pruning } : {}),
        ...(name ? { modelName: name } : {}),
      });
      // Nothing is appended while the conversation waits: the gauge says when the cache expires.
      const cache = usage.cache?.state;
      if (cache?.kind === 'warm') this.cancelExpiry = this.setTimer(Math.max(0, cache.expiresAt - this.deps.now()) + 1_000, () => this.update());
      if (conversation.isCompacting()) this.presentation = { ...this.presentation, text: '$(sync~spin) compacting…' };
      this.maybeWarn(conversation.id, conversation.assess().level);
    }
    this.deps.item.show(this.presentation);
  }

  private maybeWarn(conversationId: string, level: string): void {
    if (level !== 'warning' || !this.deps.settings().showWarnings || this.warned.has(conversationId)) return;
    this.warned.add(conversationId);
    void vscode.window.showWarningMessage("Longrun: the conversation fills most of the model's context window.", 'Compact Now').then((choice) => {
      if (choice === 'Compact Now') void vscode.commands.executeCommand(COMMAND.compact);
    });
  }
}
