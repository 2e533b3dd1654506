/**
 * `loopstate verify`'s progress on a long exploration, on stderr (stdout keeps the report alone): on a terminal one
 * line redrawn in place a few times a second once the exploration has run for a second, and erased before the
 * report; elsewhere (a log, a hook's captured output) a plain line every ten seconds. A short exploration prints
 * nothing.
 */
import type { ExploreProgress } from '../verify/explore.js';
import type { CliIo } from './cli-io.js';
import { groupDigits } from '../verify/group-digits.js';

export const VERIFY_PROGRESS_TIMING = Object.freeze({
  /** On a terminal: first shown after, and redrawn at most every (ms). */
  terminalAfterMs: 1_000,
  terminalEveryMs: 200,
  /** Elsewhere: a line after, and every (ms). */
  linesEveryMs: 10_000,
});

export interface VerifyProgressView {
  onProgress(progress: ExploreProgress): void;
  /** Erases the redrawn line, if one is shown. */
  finish(): void;
}

const count = groupDigits;

export function progressLine(progress: ExploreProgress, elapsedMs: number): string {
  return `exploring: ${count(progress.states)} states (${count(progress.expanded)} expanded), ${count(progress.transitions)} transitions, ${(elapsedMs / 1000).toFixed(1)} s`;
}

/** `now` is the clock the view reads (the command's own: an exploration scaled down starts over several times). */
export function createVerifyProgressView(io: CliIo, now: () => number = () => performance.now()): VerifyProgressView {
  const started = now();
  const terminal = io.progress?.isTTY === true ? io.progress : null;
  let shownAt: number | null = null;
  let lineShown = false;
  return {
    onProgress(progress) {
      const at = now();
      const elapsed = at - started;
      if (terminal !== null) {
        if (elapsed < VERIFY_PROGRESS_TIMING.terminalAfterMs) return;
        if (shownAt !== null && at - shownAt < VERIFY_PROGRESS_TIMING.terminalEveryMs) return;
        terminal.write(`\r\x1b[K${progressLine(progress, elapsed)}`);
        lineShown = true;
      } else {
        if (elapsed < (shownAt === null ? 0 : shownAt - started) + VERIFY_PROGRESS_TIMING.linesEveryMs) return;
        io.err(progressLine(progress, elapsed));
      }
      shownAt = at;
    },
    finish() {
      if (terminal !== null && lineShown) terminal.write('\r\x1b[K');
      lineShown = false;
    },
  };
}
