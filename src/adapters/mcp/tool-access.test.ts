import { describe, expect, it } from 'vitest';
import { accessFromAnnotations, isIdempotent } from './tool-access.js';

describe('accessFromAnnotations', () => {
  it('is fail-closed: only readOnlyHint true reads, only destructiveHint false writes', () => {
    expect(accessFromAnnotations({ readOnlyHint: true })).toBe('read');
    expect(accessFromAnnotations({ readOnlyHint: true, destructiveHint: true })).toBe('read');
    expect(accessFromAnnotations({ destructiveHint: false })).toBe('write');
    expect(accessFromAnnotations({ readOnlyHint: false, destructiveHint: false })).toBe('write');
    expect(accessFromAnnotations({ readOnlyHint: false })).toBe('destructive');
    expect(accessFromAnnotations({ idempotentHint: true })).toBe('destructive');
    expect(accessFromAnnotations({})).toBe('destructive');
    expect(accessFromAnnotations(undefined)).toBe('destructive');
  });

  it('marks a call idempotent by idempotentHint true, or as a read', () => {
    expect(isIdempotent({ idempotentHint: true }, 'destructive')).toBe(true);
    expect(isIdempotent({ idempotentHint: false }, 'write')).toBe(false);
    expect(isIdempotent(undefined, 'write')).toBe(false);
    expect(isIdempotent(undefined, 'read')).toBe(true);
  });
});
