import { describe, expect, it } from 'vitest';
import type { ExploreProgress } from '../verify/explore.js';
import { createVerifyProgressView, progressLine, VERIFY_PROGRESS_TIMING } from './verify-progress.js';

const progress = (states: number): ExploreProgress => ({
  states,
  expanded: states / 2,
  transitions: states * 10,
  elapsedMs: 0,
});

function fakeIo(tty: boolean) {
  const written: string[] = [];
  const lines: string[] = [];
  let clock = 0;
  const io = {
    out: () => undefined,
    err: (text: string) => lines.push(text),
    progress: { isTTY: tty, write: (text: string) => written.push(text) },
  };
  return { io, written, lines, advance: (ms: number) => (clock += ms), now: () => clock };
}

describe("verify's progress view", () => {
  it('on a terminal: nothing for the first second, then one line redrawn at most every 200 ms, erased at the end', () => {
    const { io, written, lines, advance, now } = fakeIo(true);
    const view = createVerifyProgressView(io, now);
    advance(VERIFY_PROGRESS_TIMING.terminalAfterMs - 1);
    view.onProgress(progress(2_048));
    expect(written).toEqual([]);
    advance(1);
    view.onProgress(progress(4_096));
    advance(VERIFY_PROGRESS_TIMING.terminalEveryMs - 1);
    view.onProgress(progress(6_144));
    advance(1);
    view.onProgress(progress(8_192));
    view.finish();
    expect(written).toEqual([
      `\r\x1b[K${progressLine(progress(4_096), 1_000)}`,
      `\r\x1b[K${progressLine(progress(8_192), 1_200)}`,
      '\r\x1b[K',
    ]);
    expect(written[0]).toContain('exploring: 4,096 states (2,048 expanded), 40,960 transitions, 1.0 s');
    expect(lines).toEqual([]);
  });

  it('elsewhere: a plain line on stderr every ten seconds, nothing to erase', () => {
    const { io, written, lines, advance, now } = fakeIo(false);
    const view = createVerifyProgressView(io, now);
    for (let second = 1; second <= 25; second += 1) {
      advance(1_000);
      view.onProgress(progress(second * 1_000));
    }
    view.finish();
    expect(written).toEqual([]);
    expect(lines).toEqual([progressLine(progress(10_000), 10_000), progressLine(progress(20_000), 20_000)]);
  });

  it('a short exploration prints nothing at all', () => {
    const { io, written, lines, advance, now } = fakeIo(true);
    const view = createVerifyProgressView(io, now);
    advance(500);
    view.onProgress(progress(2_048));
    view.finish();
    expect([...written, ...lines]).toEqual([]);
  });
});
