/**
 * The end of a Chat Completions stream, seen in its bytes. The openai client reads past `data: [DONE]` until
 * the server closes the connection, so a server that sends everything and then leaves the socket open would
 * idle the call out and have a whole, billed reply discarded and asked for again. The watchdog ends the body
 * at the `[DONE]` line instead.
 */

/** What a `[DONE]` line starts with, as the client reads it (`data:`, an optional space, `[DONE]`). */
const DONE_LINES = ['data: [DONE]', 'data:[DONE]'];
const LONGEST = Math.max(...DONE_LINES.map((line) => line.length));
const LINE_FEED = 0x0a;
const CARRIAGE_RETURN = 0x0d;

/**
 * Finds the `[DONE]` line across chunk boundaries, looking only at the first characters of each line.
 * @example
 * const end = new DoneLineFinder(); end.sawDone(new TextEncoder().encode('data: [DONE]\n\n')); // true
 */
export class DoneLineFinder {
  private start = '';

  /** True when a line that starts like `data: [DONE]` ends in this chunk. */
  sawDone(chunk: Uint8Array): boolean {
    for (const byte of chunk) {
      if (byte === LINE_FEED || byte === CARRIAGE_RETURN) {
        if (DONE_LINES.some((line) => this.start.startsWith(line))) return true;
        this.start = '';
      } else if (this.start.length < LONGEST) {
        this.start += String.fromCharCode(byte);
      }
    }
    return false;
  }
}
