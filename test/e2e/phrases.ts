/** What the end-to-end driver types into the chat 1.5 s after the workbench of the branches phase appears. */
export const FIRST_MESSAGE = 'first message after the window opened';
/** What it types into a new user's first window, as soon as the chat takes input. */
export const NEW_USER_MESSAGE = 'first message of a new user';
