import { describe, expect, it } from 'vitest';
import { countDifferences, firstDifference, nearestRecorded, shorten } from './nearest-request.js';

const user = (content: string) => ({ role: 'user', content });

describe('firstDifference', () => {
  it('names the first differing field by path, both values shown', () => {
    expect(
      firstDifference({ messages: [user('a'), user('b')], tools: [] }, { messages: [user('a'), user('c')], tools: [] }),
    ).toEqual({
      path: 'messages[1].content',
      recorded: '"b"',
      received: '"c"',
    });
  });

  it('names a field one side lacks as absent, and quotes keys that are not identifiers', () => {
    expect(firstDifference({ messages: [user('a')] }, { messages: [user('a'), user('b')] })).toEqual({
      path: 'messages[1]',
      recorded: '(absent)',
      received: '{"role":"user","content":"b"}',
    });
    expect(firstDifference({ fields: { 'x-mode': 1 } }, { fields: { 'x-mode': 2 } })?.path).toBe('fields["x-mode"]');
    expect(firstDifference({ a: 1 }, { a: 1 })).toBeNull();
  });

  it('shows long strings from just before where they part', () => {
    const base = 'x'.repeat(300);
    const difference = firstDifference({ content: `${base}recorded tail` }, { content: `${base}replayed tail` });
    // They part after the shared "re": 24 characters before that point are shown.
    expect(difference?.recorded).toBe(`"…${'x'.repeat(22)}recorded tail" (313 chars)`);
    expect(difference?.received).toBe(`"…${'x'.repeat(22)}replayed tail" (313 chars)`);
  });
});

describe('shorten', () => {
  it('cuts values to about 80 characters and says how long they were', () => {
    expect(shorten('short')).toBe('"short"');
    expect(shorten('a'.repeat(200))).toBe(`"${'a'.repeat(80)}…" (200 chars)`);
    expect(shorten({ list: Array.from({ length: 40 }, (_, index) => index) })).toMatch(
      /^\{"list":\[0,1,2,.*…\s\(\d+ chars\)$/,
    );
    expect(shorten(undefined)).toBe('(absent)');
  });
});

describe('nearestRecorded', () => {
  const first = { messages: [user('goal')] };
  const second = { messages: [user('goal'), { role: 'tool', content: 'shipped' }] };
  const third = { messages: [user('goal'), { role: 'tool', content: 'shipped' }, user('thanks')] };

  it('picks the recorded request with the fewest differing fields', () => {
    const received = { messages: [user('goal'), { role: 'tool', content: 'lost' }] };
    expect(countDifferences(second, received)).toBe(1);
    expect(countDifferences(first, received)).toBe(2); // the whole tool message is missing
    expect(countDifferences(third, received)).toBe(3);
    expect(nearestRecorded([first, second, third], received, 1)).toEqual({
      index: 1,
      difference: { path: 'messages[1].content', recorded: '"shipped"', received: '"lost"' },
    });
  });

  it('breaks ties by closeness to the replayed call, then by recording order', () => {
    const a = { messages: [user('a')] };
    const b = { messages: [user('b')] };
    expect(nearestRecorded([a, b], { messages: [user('c')] }, 2)?.index).toBe(1);
    expect(nearestRecorded([a, b], { messages: [user('c')] }, 9)?.index).toBe(1);
    expect(nearestRecorded([a, b], { messages: [user('c')] }, 1)?.index).toBe(0);
    expect(nearestRecorded([], { messages: [] }, 1)).toBeNull();
  });
});
