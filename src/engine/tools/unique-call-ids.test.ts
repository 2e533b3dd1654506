import { describe, expect, it } from 'vitest';
import type { ToolCallRequest } from '../../contracts/model.js';
import { assignUniqueCallIds } from './unique-call-ids.js';

const call = (id: string, args = '{}'): ToolCallRequest => ({ id, name: 'transfer', arguments: args });

describe('assignUniqueCallIds', () => {
  it('returns the same array when every id is present and unique', () => {
    const calls = [call('a'), call('b')];
    expect(assignUniqueCallIds(calls)).toBe(calls);
  });

  it('gives empty ids distinct ids and keeps the arguments', () => {
    const ids = assignUniqueCallIds([call('', '{"amount":1}'), call('', '{"amount":2}')]);
    expect(ids).toEqual([call('call_0', '{"amount":1}'), call('call_1', '{"amount":2}')]);
  });

  it('renames the second and later uses of a repeated id, keeping the first', () => {
    expect(assignUniqueCallIds([call('x'), call('x'), call('x')]).map(({ id }) => id)).toEqual(['x', 'x_1', 'x_2']);
  });

  it('never picks an id another call of the reply already has', () => {
    const ids = assignUniqueCallIds([call('call_1'), call(''), call('')]).map(({ id }) => id);
    expect(ids).toEqual(['call_1', 'call_1_1', 'call_2']);
    expect(new Set(ids).size).toBe(3);
  });
});
