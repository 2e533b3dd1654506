/**
 * Text from a model, a tool, a trace or a loop file, made safe to print to a terminal. A raw ESC (or its
 * one-byte C1 forms) starts a control sequence the terminal obeys: OSC 52 writes the clipboard, OSC 0 sets
 * the title, CSI 2J clears the screen, and a carriage return overwrites the line before it. Every such
 * character is written as a visible `\uXXXX` escape instead, which stays valid inside a JSON string, so
 * the same function guards `--json` output.
 */

/**
 * C0 controls (newline and tab aside), DEL, C1 controls, and the Unicode controls that reorder or hide
 * text (bidi marks, embeddings, overrides and isolates; line and paragraph separators).
 */
// eslint-disable-next-line no-control-regex -- matching control characters is this pattern's purpose
const UNSAFE = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028-\u202E\u2066-\u2069]/g;
// eslint-disable-next-line no-control-regex -- as above, with newline and tab too
const UNSAFE_IN_LINE = /[\u0000-\u001F\u007F-\u009F\u061C\u200E\u200F\u2028-\u202E\u2066-\u2069]/g;

const escape = (character: string) => `\\u${character.charCodeAt(0).toString(16).padStart(4, '0')}`;

/**
 * `text` with every control character written as a visible `\uXXXX` escape; newlines and tabs are kept.
 * @example
 * terminalSafe('done\u001b]52;c;ZWNobyBoaQ==\u0007') // 'done\\u001b]52;c;ZWNobyBoaQ==\\u0007'
 */
export function terminalSafe(text: string): string {
  return text.replace(UNSAFE, escape);
}

/**
 * `text` as one line: like `terminalSafe`, and newlines and tabs are escaped too, so a value cannot start
 * a line of its own.
 * @example
 * terminalLine('run-1\nrun ended: completed') // 'run-1\\u000arun ended: completed'
 */
export function terminalLine(text: string): string {
  return text.replace(UNSAFE_IN_LINE, escape);
}
