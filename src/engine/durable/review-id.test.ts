import { describe, expect, it } from 'vitest';
import { reviewIdOf } from './review-id.js';

describe('reviewIdOf', () => {
  it('tells two stops on the same output apart, and names the output', () => {
    const hash = '3f2a9c01b4d5e6f7';
    expect(reviewIdOf(7, hash)).toBe('7-3f2a9c01b4d5e6f7');
    expect(reviewIdOf(7, hash)).not.toBe(reviewIdOf(12, hash));
    expect(reviewIdOf(7, hash)).not.toBe(reviewIdOf(7, 'ffffffffffffffff'));
  });
});
