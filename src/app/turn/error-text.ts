import { describeOverflow } from '../../core/overflow-error';
import { isModelTimeout, OverWindow } from '../../llm/agent';
import type { LongrunSettings } from '../settings';
import { errorText } from '../../core/errors';
import { ViewNotWholeError } from '../conversation/conversation-records';
import { ConversationChangedError } from '../store/errors';
import { MissingApiKeyError } from '../../llm/providers/missing-api-key';

/**
 * What a failed request says in the chat. Free of `vscode`, so it is tested in Node.
 */

/** What to do when a request keeps being refused: the ways out that lose nothing. */
const WAYS_OUT =
  'If it happens again: /compact (or "Longrun: Undo Last Compaction" if a compaction caused it), or /new to start a new conversation; this one stays on disk.';

/** Said after `ConversationChangedError`'s sentence when the request went on from the conversation read again. */
export const READ_AGAIN = 'Longrun read it again from disk and goes on from it as it is now.';

/** Said after `ConversationChangedError`'s sentence when it stopped a request under way. */
const STOPPED_TO_READ_AGAIN =
  'Longrun saved nothing more of this request and reads the conversation again from disk; send your message again to go on from it as it is now.';

/**
 * llama.cpp's answer when the model wrote a tool call that its chat format's parser cannot read
 * ("The model produced output that does not match the expected Hermes 2 Pro format"): a 500 that the
 * request's one retry may get past, since the model samples anew.
 */
const UNREADABLE_TOOL_CALL = /does not match the expected (.+?) format/i;

/** The message a failed request shows in the chat: what happened, in words, without secrets, and what to do. */
export function errorMessage(error: unknown, settings: Pick<LongrunSettings, 'timeouts'>, redact: (text: string) => string): string {
  if (ConversationChangedError.isInstance(error)) return `${error.message} ${STOPPED_TO_READ_AGAIN}`;
  if (ViewNotWholeError.isInstance(error)) return error.message;
  if (describeOverflow(error))
    return "The conversation no longer fits the model's context window, even after compacting. Run /compact with a focus, or /new to start over.";
  // Nothing was sent: storing the key is the whole remedy, and the conversation is as it was.
  if (MissingApiKeyError.isInstance(error)) return error.message;
  if (OverWindow.isInstance(error)) return `${errorText(error)} Run /compact with a focus, or /new to start over.`;
  if (isModelTimeout(error)) {
    const first = /first chunk/i.test(error instanceof Error ? error.message : '');
    const seconds = Math.round((first ? settings.timeouts.firstChunkMs : settings.timeouts.idleMs) / 1000);
    return first
      ? `The model sent nothing for ${seconds} s, so the request was stopped (longrun.timeouts.firstChunkSeconds). Nothing was lost. Is the server running? A slow local model may need a longer limit.`
      : `The model went silent for ${seconds} s in the middle of its answer, so the request was stopped (longrun.timeouts.idleSeconds). Nothing was lost; ask again to continue.`;
  }
  const message = redact(errorText(error));
  const format = UNREADABLE_TOOL_CALL.exec(message)?.[1];
  if (format !== undefined)
    return `The model wrote a tool call that its server could not read (the server expected its ${format} format), and did so again when Longrun asked once more. Nothing was lost: ask again, or use a model whose chat template supports tool calls.\n\nThe server said: ${message}`;
  return `The model request failed: ${message}\n\n${WAYS_OUT}`;
}
