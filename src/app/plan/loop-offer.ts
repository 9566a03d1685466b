import type { NoticeSurface } from '../turn/in-sight-chat';
import { COMPACT_HARDER_COMMAND, NEW_FROM_PLAN_COMMAND } from '../contributions';

/**
 * What the chat says when a turn stopped for a compaction loop (two summaries in a row with no
 * progress between them, see `stopsForLoop`), and what it offers: a compaction that keeps less of the
 * recent work, or a new conversation whose first request carries the plan and the latest request.
 */

export const LOOP_NOTICE =
  'Longrun stopped this request: the conversation was compacted twice in a row with no progress in between (no change to the plan, no file written or newly read, no command that passed), and a third compaction would only go round again.';

/** Shows the notice and the two buttons in `chat`; returns the notice, for the log. */
export function offerAfterLoop(conversationId: string, chat: NoticeSurface): string {
  chat.notice(
    `\n\n> ${LOOP_NOTICE} "Compact harder" compacts keeping less of the recent work; "New conversation from the plan" starts a new conversation whose first request carries the plan and your latest request. Or say how to go on.\n\n`,
    [
      { command: COMPACT_HARDER_COMMAND, title: 'Compact harder', arguments: [conversationId] },
      { command: NEW_FROM_PLAN_COMMAND, title: 'New conversation from the plan', arguments: [conversationId] },
    ],
  );
  return LOOP_NOTICE;
}
