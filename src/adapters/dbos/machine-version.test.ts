import { describe, expect, it } from 'vitest';
import { machineVersion } from './machine-version.js';

describe('machineVersion', () => {
  it('is stable for one statechart and carries the caller version', () => {
    expect(machineVersion()).toMatch(/^loopstate-[0-9a-f]{12}$/);
    expect(machineVersion()).toBe(machineVersion());
    expect(machineVersion('refunds-3')).toBe(`${machineVersion()}+refunds-3`);
  });
});
