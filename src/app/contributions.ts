/**
 * The names VS Code knows Longrun's parts by. The entry point (src/extension.ts) registers each of
 * them when the extension activates, before the rest of the extension is loaded, so they live here
 * as plain constants that import nothing.
 */

/** The chat participant `@longrun`. */
export const PARTICIPANT_ID = 'longrun.agent';

/** The vendor of Longrun's own models in VS Code's model picker. */
export const VENDOR = 'longrun';

/** The commands of the Command Palette, by name, as package.json declares them (category "Longrun"). */
export const COMMAND = {
  compact: 'longrun.compact',
  showSummary: 'longrun.showSummary',
  /** Opens the summary of a compaction for editing; the chat's "Edit summary" button runs it too. */
  editSummary: 'longrun.editSummary',
  undoCompaction: 'longrun.undoCompaction',
  newConversation: 'longrun.newConversation',
  openConversation: 'longrun.openConversation',
  exportConversation: 'longrun.exportConversation',
  showContextUsage: 'longrun.showContextUsage',
  setApiKey: 'longrun.setApiKey',
  openChat: 'longrun.openChat',
  chooseAgentTools: 'longrun.chooseAgentTools',
} as const;

/** The commands of the Command Palette, in the order package.json declares them. */
export const PALETTE_COMMANDS = [
  COMMAND.compact,
  COMMAND.showSummary,
  COMMAND.editSummary,
  COMMAND.undoCompaction,
  COMMAND.newConversation,
  COMMAND.openConversation,
  COMMAND.exportConversation,
  COMMAND.showContextUsage,
  COMMAND.setApiKey,
  COMMAND.openChat,
  COMMAND.chooseAgentTools,
] as const;

/** The command the chat's "Compact" / "Not now" buttons run. Not in the Command Palette. */
export const ANSWER_COMMAND = 'longrun.answerCompaction';
/** The command the chat's Apply / Reject buttons run. Not in the Command Palette. */
export const ANSWER_APPROVAL_COMMAND = 'longrun.answerApproval';
/** The command of the chat's "Show diff" button. Not in the Command Palette. */
export const SHOW_CHANGE_COMMAND = 'longrun.showChange';

/**
 * The command of the chat's "Revert Longrun's changes…" button, offered when the chat was rewound
 * past turns that changed files. Not in the Command Palette.
 */
export const REVERT_COMMAND = 'longrun.revertChanges';

/**
 * The command of the chat's "Carry over what they learned" button, offered when the chat continues
 * from an earlier point and the turns it leaves behind did work worth telling. Not in the Command Palette.
 */
export const CARRY_ACCOUNT_COMMAND = 'longrun.carryAccount';

/** The commands of the buttons offered when a turn stopped for a compaction loop. Not in the Command Palette. */
export const COMPACT_HARDER_COMMAND = 'longrun.compactHarder';
export const NEW_FROM_PLAN_COMMAND = 'longrun.newFromPlan';

/** The command of a subagent's "Show transcript" button in the chat. Not in the Command Palette. */
export const SHOW_TRANSCRIPT_COMMAND = 'longrun.showSubagentTranscript';

/** Every command Longrun registers: the Command Palette's and those behind the chat's buttons. */
export const COMMANDS: readonly string[] = [
  ...PALETTE_COMMANDS,
  ANSWER_COMMAND,
  ANSWER_APPROVAL_COMMAND,
  SHOW_CHANGE_COMMAND,
  REVERT_COMMAND,
  CARRY_ACCOUNT_COMMAND,
  COMPACT_HARDER_COMMAND,
  NEW_FROM_PLAN_COMMAND,
  SHOW_TRANSCRIPT_COMMAND,
];

/** Read-only Markdown documents: summaries and the context report. */
export const DOC_SCHEME = 'longrun';
/** The proposed side of a write's diff editor, while the user is asked. */
export const PROPOSAL_SCHEME = 'longrun-proposal';
/** The whole diff of a change the chat shows behind "Show diff". */
export const CHANGE_SCHEME = 'longrun-change';
/** The schemes of documents served by a text document content provider. */
export const CONTENT_SCHEMES = [DOC_SCHEME, PROPOSAL_SCHEME, CHANGE_SCHEME] as const;
/** Summaries to preview and edit: a file system, so that the editor can save them. */
export const SUMMARY_SCHEME = 'longrun-summary';

/**
 * The workspace-state key of the list of conversations. Set once Longrun has been used in a
 * workspace: the entry point then loads the rest of the extension at once, to show the gauge.
 */
export const INDEX_KEY = 'longrun.conversations';
