import { summaryHeading } from './summary-request';

/**
 * Checks a model-written summary before it replaces anything, and repairs what can be repaired
 * deterministically: the summary must exist, and the user's original task must be in it verbatim.
 * (The file ledger is never left to the model: it is appended separately.)
 */

const MIN_USABLE_CHARS = 40;

export function unusableReason(summary: string): string | undefined {
  const trimmed = summary.trim();
  if (!trimmed) return 'the summarizer returned no text';
  if (trimmed.length < MIN_USABLE_CHARS) return `the summarizer returned only ${trimmed.length} characters`;
  return undefined;
}

export interface Repaired {
  readonly text: string;
  /** What was added, for the log. */
  readonly repairs: readonly string[];
}

export function repairSummary(summary: string, round: number, originalTask: string | undefined): Repaired {
  let text = summary.trim();
  const repairs: string[] = [];
  if (!text.includes(summaryHeading(round))) {
    text = `${summaryHeading(round)}\n\n${text}`;
    repairs.push('heading');
  }
  if (originalTask && !normalised(text).includes(normalised(originalTask))) {
    const heading = summaryHeading(round);
    const block = `### Original Task (verbatim)\n${originalTask}\n`;
    text = text.replace(heading, `${heading}\n\n${block}`);
    repairs.push('original task');
  }
  return { text, repairs };
}

function normalised(value: string): string {
  return value.replace(/\s+/g, ' ').trim().toLowerCase();
}
