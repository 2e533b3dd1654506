/**
 * The engine's own digest, for fingerprints and change detection: synchronous and in every JavaScript runtime.
 * On the short texts hashed per call (fingerprints, keys, digests) it is cheaper than a native sha1 call, whose
 * fixed cost dominates there; on long tool results native (hardware) sha1 is faster per byte, a few µs per
 * kilobyte that the portability is worth. Nothing it hashes is a secret or a signature, so a 64-bit
 * non-cryptographic hash is enough: two 32-bit multiply-xorshift lanes over the string's UTF-16 code units
 * (cyrb53's construction, kept to 64 bits), which every runtime sees the same.
 */

// By table: Number#toString(16) of a 32-bit value costs more than hashing a short text.
const HEX_BYTES = Array.from({ length: 256 }, (_, byte) => byte.toString(16).padStart(2, '0'));
const hex8 = (value: number) =>
  HEX_BYTES[value >>> 24]! +
  HEX_BYTES[(value >>> 16) & 255]! +
  HEX_BYTES[(value >>> 8) & 255]! +
  HEX_BYTES[value & 255]!;

/**
 * A 64-bit digest of `text` as 16 hex characters; the same text always gives the same digest, in any runtime.
 * @example
 * digest64('lookup:{"order_id":"O-1"}') // 16 hex characters
 */
export function digest64(text: string): string {
  let high = 0xdeadbeef;
  let low = 0x41c6ce57;
  for (let index = 0; index < text.length; index++) {
    const unit = text.charCodeAt(index);
    high = Math.imul(high ^ unit, 2654435761);
    low = Math.imul(low ^ unit, 1597334677);
  }
  high = Math.imul(high ^ (high >>> 16), 2246822507);
  high ^= Math.imul(low ^ (low >>> 13), 3266489909);
  low = Math.imul(low ^ (low >>> 16), 2246822507);
  low ^= Math.imul(high ^ (high >>> 13), 3266489909);
  return hex8(low) + hex8(high);
}

/**
 * SHA-1 of `text`'s UTF-8 bytes as 40 hex characters, in plain JavaScript. Only for runs journalled before
 * `digest64`: their fingerprints were sha1, and a resumed run must keep hashing as it began, or a repeated
 * call would look new.
 * @example
 * legacySha1('abc') // 'a9993e364706816aba3e25717850c26c9cd0d89d'
 */
export function legacySha1(text: string): string {
  const bytes = new TextEncoder().encode(text);
  const paddedLength = (((bytes.length + 8) >> 6) + 1) << 6;
  const padded = new Uint8Array(paddedLength);
  padded.set(bytes);
  padded[bytes.length] = 0x80;
  const view = new DataView(padded.buffer);
  view.setUint32(paddedLength - 8, Math.floor(bytes.length / 0x20000000));
  view.setUint32(paddedLength - 4, (bytes.length * 8) >>> 0);
  const state = [0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0];
  const words = new Int32Array(80);
  for (let offset = 0; offset < paddedLength; offset += 64) {
    for (let index = 0; index < 16; index++) words[index] = view.getInt32(offset + index * 4);
    for (let index = 16; index < 80; index++) {
      const mixed = words[index - 3]! ^ words[index - 8]! ^ words[index - 14]! ^ words[index - 16]!;
      words[index] = (mixed << 1) | (mixed >>> 31);
    }
    let [a, b, c, d, e] = state as [number, number, number, number, number];
    for (let index = 0; index < 80; index++) {
      const round =
        index < 20
          ? ((b & c) | (~b & d)) + 0x5a827999
          : index < 40
            ? (b ^ c ^ d) + 0x6ed9eba1
            : index < 60
              ? ((b & c) | (b & d) | (c & d)) + 0x8f1bbcdc
              : (b ^ c ^ d) + 0xca62c1d6;
      const next = (((a << 5) | (a >>> 27)) + round + e + words[index]!) | 0;
      e = d;
      d = c;
      c = (b << 30) | (b >>> 2);
      b = a;
      a = next;
    }
    state[0] = (state[0]! + a) | 0;
    state[1] = (state[1]! + b) | 0;
    state[2] = (state[2]! + c) | 0;
    state[3] = (state[3]! + d) | 0;
    state[4] = (state[4]! + e) | 0;
  }
  return state.map(hex8).join('');
}
