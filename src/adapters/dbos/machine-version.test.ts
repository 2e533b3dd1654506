import { describe, expect, it } from 'vitest';
import { loopMachine } from '../../../machines/index.js';
import { RECORD_SCHEMA_VERSION } from '../../engine/durable/records.js';
import { definitionDigest, machineVersion } from './machine-version.js';

describe('machineVersion', () => {
  it('is stable for one statechart and carries the caller version', () => {
    expect(machineVersion()).toMatch(/^loopstate-[0-9a-f]{12}$/);
    expect(machineVersion()).toBe(machineVersion());
    expect(machineVersion('refunds-3')).toBe(`${machineVersion()}+refunds-3`);
    expect(machineVersion()).toBe(`loopstate-${definitionDigest(loopMachine.config, RECORD_SCHEMA_VERSION)}`);
  });

  it('changes with a guard name (an edge guarded by another guard) and with the record schema version', () => {
    const config = JSON.stringify(loopMachine.config);
    expect(config).toContain('isReviewRequested');
    const renamed = JSON.parse(config.replaceAll('isReviewRequested', 'isReviewAsked')) as unknown;
    const digest = definitionDigest(loopMachine.config, RECORD_SCHEMA_VERSION);
    expect(definitionDigest(renamed, RECORD_SCHEMA_VERSION)).not.toBe(digest);
    expect(definitionDigest(loopMachine.config, RECORD_SCHEMA_VERSION + 1)).not.toBe(digest);
  });
});
