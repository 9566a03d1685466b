import * as vscode from 'vscode';
import { compactionSentence } from '../app/report/reports';
import { planHandoff } from '../core/plan-handoff';
import type { CompactionReporter } from './compaction-report';
import type { ConversationRegistry } from '../app/conversation/conversation-registry';

/**
 * The buttons offered when a turn stopped for a compaction loop (`src/app/plan/loop-offer.ts`): "Compact
 * harder", a compaction keeping a quarter of the recent work the settings keep, and "New conversation
 * from the plan", a new chat whose first request carries the plan and the latest request.
 */

export interface LoopCommandDeps {
  readonly registry: ConversationRegistry;
  readonly reporter: CompactionReporter;
}

/** Compacts conversation `conversationId` keeping less; resolves with the outcome's status. */
export async function compactHarder(deps: LoopCommandDeps, conversationId: unknown): Promise<unknown> {
  const conversation = typeof conversationId === 'string' ? await deps.registry.find(conversationId) : undefined;
  if (!conversation) {
    void vscode.window.showInformationMessage('Longrun: that conversation is no longer stored here.');
    return undefined;
  }
  const outcome = await vscode.window.withProgress(
    { location: vscode.ProgressLocation.Notification, title: 'Longrun: compacting harder…', cancellable: true },
    (_progress, token) => {
      const controller = new AbortController();
      token.onCancellationRequested(() => controller.abort());
      return conversation.compact('manual', { signal: controller.signal, keepLess: true });
    },
  );
  deps.reporter.report(outcome, 'manual');
  const said =
    outcome.status === 'compacted'
      ? `${compactionSentence(outcome.compaction)}, keeping less of the recent work. Say how to go on in the chat.`
      : outcome.reason;
  void vscode.window.showInformationMessage(`Longrun: ${said}`);
  return outcome.status;
}

/**
 * Starts a new conversation in a new chat, and sends it the plan and the latest request of
 * conversation `conversationId`; resolves with the new conversation's id.
 */
export async function newFromPlan(deps: LoopCommandDeps, conversationId: unknown): Promise<unknown> {
  const from = typeof conversationId === 'string' ? await deps.registry.find(conversationId) : undefined;
  if (!from) {
    void vscode.window.showInformationMessage('Longrun: that conversation is no longer stored here.');
    return undefined;
  }
  const request = planHandoff(from.log());
  const conversation = await deps.registry.startNew();
  // Each chat continues its own conversation: the new one goes with a new chat.
  deps.registry.continueInNextChat(conversation.id);
  await vscode.commands.executeCommand('workbench.action.chat.newChat').then(undefined, () => undefined);
  await vscode.commands.executeCommand('workbench.action.chat.open', { query: `@longrun ${request}` });
  return conversation.id;
}
