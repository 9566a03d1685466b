/**
 * The values of each kind of field a log record holds, written once: the record types
 * (`log.ts`) are derived from these lists, and the schemas that read records back (src/app/store)
 * are built from them, so a value cannot be added to one without the other.
 */

/** Why a compaction ran; `cache-expired`: the provider's prompt cache had expired, so pruning cost nothing more. */
export const COMPACTION_REASONS = ['threshold', 'overflow', 'manual', 'cache-expired'] as const;

/** Roles a summary message may take in the model's view. */
export const SUMMARY_ROLES = ['user', 'assistant'] as const;

/** What a `FileChange` did to its file. */
export const FILE_CHANGE_KINDS = ['created', 'modified'] as const;

/** The kinds of needle, in the order they are capped and shown; the stored ledger is read with these. */
export const NEEDLE_KINDS = ['constraint', 'error', 'task'] as const;

/**
 * Why an output was pruned, in the order the kinds are taken; `written` is the input of a write call
 * (the content it wrote, which the file holds), not an output.
 */
export const PRUNE_KINDS = ['duplicate', 'stale', 'written', 'old', 'truncated'] as const;

/** How long a provider keeps what a request asked it to cache (Anthropic's breakpoints): five minutes or an hour. */
export const CACHE_TTLS = ['5m', '1h'] as const;

/** Why a model call was made, for the calls that are not the agent's: a summary of a compaction, a subagent's request. */
export const USAGE_PURPOSES = ['summary', 'subagent'] as const;

/** The statuses a step of the agent's plan takes (see `plan.ts`). */
export const PLAN_STATUSES = ['pending', 'in_progress', 'done', 'blocked'] as const;

/**
 * How a subagent's work ended, as its last record says: it reported, it failed (an error, a budget
 * spent, an empty answer), or the turn that started it was stopped. A subagent with no such record
 * was cut short (a crash, a reload) and reads back as interrupted.
 */
export const SUBAGENT_ENDINGS = ['reported', 'failed', 'cancelled'] as const;
