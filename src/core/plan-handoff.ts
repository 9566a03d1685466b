import { isSummaryMessage, type ConversationLog } from './history';
import { checkPlan } from './plan-check';
import { planCounts, planLines } from './plan-text';

/**
 * The first request of a new conversation started from a conversation's plan ("New conversation
 * from the plan", offered when a turn stopped for a compaction loop): the user's latest request word
 * for word, and the plan as its last update left it, checked against the old conversation's record.
 * Bounded like the work state: the request cut at `HANDOFF_REQUEST_CHARS`, the plan's lines at
 * `HANDOFF_PLAN_CHARS`.
 */

export const HANDOFF_REQUEST_CHARS = 4_000;
export const HANDOFF_PLAN_CHARS = 6_000;

/** The request that carries `log`'s latest request and plan into a new conversation. */
export function planHandoff(log: ConversationLog): string {
  const request = latestRequest(log);
  const plan = checkPlan(log);
  const lines = ['Go on with this work, started in another conversation, from where its plan stands.'];
  if (request) {
    const cut =
      request.length > HANDOFF_REQUEST_CHARS
        ? `${request.slice(0, HANDOFF_REQUEST_CHARS)}\n[… cut here: the rest is in the earlier conversation]`
        : request;
    lines.push('', 'The request:', ...cut.split('\n').map((line) => `> ${line}`));
  }
  if (plan) {
    lines.push('', `The plan, as its last update left it (${planCounts(plan.steps)}; done steps checked against that conversation's record):`);
    lines.push(...planLines(plan.steps, HANDOFF_PLAN_CHARS, (text) => text.length));
  }
  return lines.join('\n');
}

function latestRequest(log: ConversationLog): string | undefined {
  for (let i = log.length - 1; i >= 0; i--) {
    const record = log[i]!;
    if (record.type !== 'message' || record.message.role !== 'user' || isSummaryMessage(record.message)) continue;
    const text = record.message.content
      .map((p) => (p.type === 'text' ? p.text : ''))
      .join('\n')
      .trim();
    if (text) return text;
  }
  return undefined;
}
