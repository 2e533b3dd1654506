import { describe, expect, it } from 'vitest';
import { STOP_REASONS } from '../../../machines/types.js';
import { explainStopReason } from './stop-reason-text.js';

describe('explainStopReason', () => {
  it('has one distinct sentence for every stop reason', () => {
    const sentences = STOP_REASONS.map(explainStopReason);
    expect(new Set(sentences).size).toBe(STOP_REASONS.length);
    for (const sentence of sentences) expect(sentence).toMatch(/^[A-Z].*\.$/);
  });

  it('names a reason it does not know instead of failing', () => {
    expect(explainStopReason('paused')).toContain('"paused"');
    expect(explainStopReason('toString')).toContain('"toString"');
  });
});
