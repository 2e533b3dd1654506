import { describe, expect, it } from 'vitest';
import { toolCallFingerprint } from './tool-call-fingerprint.js';

describe('toolCallFingerprint', () => {
  it('is name:canonical-json(args)', () => {
    expect(toolCallFingerprint('get_order', { verbose: true, order_id: 'O-1' })).toBe(
      'get_order:{"order_id":"O-1","verbose":true}',
    );
  });

  it('does not depend on key order or whitespace of the parsed arguments', () => {
    const fromModelA = JSON.parse('{"order_id": "O-1", "filters": {"to": 2, "from": 1}}') as unknown;
    const fromModelB = JSON.parse('{"filters":{"from":1,"to":2},"order_id":"O-1"}') as unknown;
    expect(toolCallFingerprint('search', fromModelA)).toBe(toolCallFingerprint('search', fromModelB));
  });

  it('tells different tools, different arguments and different array orders apart', () => {
    const base = toolCallFingerprint('search', { q: 'a', ids: [1, 2] });
    expect(toolCallFingerprint('lookup', { q: 'a', ids: [1, 2] })).not.toBe(base);
    expect(toolCallFingerprint('search', { q: 'b', ids: [1, 2] })).not.toBe(base);
    expect(toolCallFingerprint('search', { q: 'a', ids: [2, 1] })).not.toBe(base);
  });

  it('quotes raw (malformed) argument text so it never collides with parsed arguments', () => {
    expect(toolCallFingerprint('search', '{"q": ')).toBe('search:"{\\"q\\": "');
    expect(toolCallFingerprint('search', '{}')).not.toBe(toolCallFingerprint('search', {}));
  });
});
