import * as os from 'node:os';
import { hasMarker, mark } from '../../core/errors';
import { CONVERSATION_FORMAT_VERSION } from './schemas';

const VERSION_ERROR = Symbol.for('longrun.ConversationVersionError');

/** A conversation file written by a newer Longrun. It is left untouched. */
export class ConversationVersionError extends Error {
  constructor(
    readonly conversationId: string,
    readonly version: number,
    readonly file: string,
  ) {
    super(
      `Conversation "${conversationId}" was saved by a newer version of Longrun (format version ${version}; ` +
        `this version reads ${CONVERSATION_FORMAT_VERSION}). Its whole layout may differ, so this version neither reads nor ` +
        `adds to it. Update Longrun to open it; the file was left unchanged: ${file}`,
    );
    this.name = 'ConversationVersionError';
    mark(this, VERSION_ERROR);
  }

  static isInstance(error: unknown): error is ConversationVersionError {
    return hasMarker(error, VERSION_ERROR);
  }
}

/** Who holds a conversation's lock, as its lock file says. */
export interface LockHolder {
  readonly pid: number;
  /** The computer's host name. */
  readonly host: string;
  /** When the lock was taken, in milliseconds since the epoch. */
  readonly since: number;
}

const CONFLICT_ERROR = Symbol.for('longrun.ConversationConflictError');

/**
 * Another VS Code window is in the way, and nothing was written.
 *
 * Two windows on one workspace share its conversations. Each write takes the conversation's lock for
 * the few milliseconds it lasts, waiting up to `lockWaitMs` for the other window's write to end
 * (`busy` when it does not). Waiting is not enough on its own: a window that read the conversation
 * before the other one added to it holds an out-of-date copy, and adding to it would interleave two
 * different histories in one log. So a store refuses to append when the conversation grew since it
 * last read or wrote it (`changed`): that window's copy is then read-only until the conversation is
 * opened again. A window reloaded after the other one wrote reads everything anew and simply goes on.
 */
export class ConversationConflictError extends Error {
  constructor(
    readonly conversationId: string,
    readonly reason: 'busy' | 'changed',
    readonly holder?: LockHolder,
  ) {
    super(
      reason === 'changed'
        ? `Conversation "${conversationId}" was continued in another VS Code window after this window read it, so this ` +
            `window's copy is out of date and nothing was saved. Reload this window to continue the conversation here, ` +
            `or start a new conversation with /new.`
        : `Conversation "${conversationId}" is being saved by another VS Code window${describeHolder(holder)}, which did not ` +
            `finish in time, so nothing was saved here. Try again in a moment, or close the other window.`,
    );
    this.name = 'ConversationConflictError';
    mark(this, CONFLICT_ERROR);
  }

  static isInstance(error: unknown): error is ConversationConflictError {
    return hasMarker(error, CONFLICT_ERROR);
  }
}

export function describeHolder(holder: LockHolder | undefined): string {
  if (!holder) return '';
  const where = holder.host === os.hostname() ? '' : ` on ${holder.host}`;
  const seconds = Math.max(0, Math.round((Date.now() - holder.since) / 1000));
  return ` (process ${holder.pid}${where}, writing for ${seconds} s)`;
}

const CHANGED_ERROR = Symbol.for('longrun.ConversationChangedError');

/**
 * A conversation's files were changed by something other than Longrun since this window read them
 * (a line rewritten, a file replaced, moved or deleted), and nothing was written. The window's copy
 * of the conversation no longer matches its files, so it is read again from disk before anything
 * else is done with it: a message read back from a changed file could be another one, or another
 * conversation's, and a record added to a replaced file would land in a history that is not this one.
 */
export class ConversationChangedError extends Error {
  constructor(
    readonly conversationId: string,
    /** What was found, ending the sentence: "<file> was deleted or moved". */
    readonly found: string,
    /**
     * The line found is the one this window read, but it was never a valid record: something other
     * than Longrun changed it before this window opened the conversation (its content is checked
     * only when read back).
     */
    readonly damagedBefore = false,
  ) {
    super(
      damagedBefore
        ? `Conversation "${conversationId}" holds a line damaged by something other than Longrun: ${found}. It is read again, the damaged line set aside.`
        : `Conversation "${conversationId}" was changed on disk by something other than Longrun since this window read it: ${found}.`,
    );
    this.name = 'ConversationChangedError';
    mark(this, CHANGED_ERROR);
  }

  static isInstance(error: unknown): error is ConversationChangedError {
    return hasMarker(error, CHANGED_ERROR);
  }
}
