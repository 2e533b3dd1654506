import { inflateRawSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { CURRENT_DICTIONARY, RECORD_DICTIONARIES } from './record-dictionary.js';
import { packCommit, unpackRows } from './row-packing.js';

const dictionary = Buffer.from(RECORD_DICTIONARIES[CURRENT_DICTIONARY]!, 'utf8');

/** The group's lengths and its inflated bytes, read from the head's header (varints, then raw deflate). */
function readGroup(packed: Uint8Array): { lengths: number[]; bytes: Buffer } {
  const values: number[] = [];
  let at = 1;
  const read = () => {
    let value = 0;
    let scale = 1;
    for (;;) {
      const byte = packed[at++]!;
      value += (byte & 0x7f) * scale;
      scale *= 0x80;
      if (byte < 0x80) return value;
    }
  };
  const count = read();
  for (let index = 0; index < count; index++) values.push(read());
  return { lengths: values, bytes: inflateRawSync(packed.subarray(at), { dictionary }) };
}

describe('packCommit', () => {
  // Bodies of every kind of UTF-16 content: ASCII, two-, three- and four-byte characters, lone surrogates at the
  // ends (each written as U+FFFD, as `Buffer.from` writes them: the third body ends with a high one and the fourth
  // begins with a low one, which joined as text would make one character), and one body past the long-body options.
  const bodies = [
    `{"a":"${'x'.repeat(300)}"}`,
    `{"b":"é—€ 日本語 ${'ü'.repeat(250)}"}`,
    `{"c":"😀 ${'🧪'.repeat(120)}"}\uD83D`,
    `\uDE00{"d":"${'y'.repeat(400)}"}\uD800`,
    `{"e":"${'long '.repeat(4_000)}"}`,
  ];
  const rows = bodies.map((body, index) => ({ seq: 10 + index, kind: 'event', body }));

  it('writes a group as the UTF-8 bytes Buffer.from gives each body, one after the other', () => {
    const packed = packCommit(rows);
    const head = packed[0]!;
    expect(head.packed![0]).toBe(128 + CURRENT_DICTIONARY);
    const group = readGroup(head.packed!);
    const expected = bodies.map((body) => Buffer.from(body, 'utf8'));
    expect(group.lengths).toEqual(expected.map((bytes) => bytes.length));
    expect(group.bytes.equals(Buffer.concat(expected))).toBe(true);
    // Each member names its head and place.
    for (const [index, row] of packed.slice(1).entries()) expect([...row.packed!]).toEqual([0, index + 1, index + 1]);
  });

  it('reads each body back as the text its UTF-8 bytes decode to (lone surrogates as U+FFFD)', () => {
    const packed = packCommit(rows);
    const read = unpackRows('r', packed, () => undefined).map((row) => row.body);
    expect(read).toEqual(bodies.map((body) => Buffer.from(body, 'utf8').toString('utf8')));
    expect(read[0]).toBe(bodies[0]);
    expect(read[3]!.startsWith('\uFFFD')).toBe(true);
  });
});
