/** What the end-to-end driver types into the chat 1.5 s after the workbench of the branches phase appears. */
export const FIRST_MESSAGE = 'first message after the window opened';
