/**
 * States looked up by the parts of their key (see `keyParts` in state-key.ts) without joining them into a string:
 * the exploration asks for the successor of every transition, hundreds of thousands of times, and nearly all are
 * states it has seen. Each part is encoded as a number from its text as the joined key shows it (`String(part)`,
 * `''` for null and undefined, as `Array.prototype.join` writes them): a text that is how JavaScript writes a
 * non-negative number is that number (so `5` and `'5'` are one code, and `-0` is `0`), any other text the negative
 * of its interned number. The codes go into an open-addressing table of flat arrays.
 *
 * So two keys have equal encodings exactly when their parts have equal texts. While no part's text holds the joined
 * key's separator `|` (`exact`), the texts split back out of the joined key one way only: equal encodings then mean
 * equal joined keys and unequal encodings unequal ones, and a miss is a state the exploration has not seen. Once a
 * text with `|` has been encoded, two encodings may join to one key: the caller then decides by the joined key.
 * `keyOf` joins an entry's key back from its codes, the texts its parts had.
 *
 * The parts come one by one (`begin`, `add`…, `end`: a `KeyPartSink`), so no array is made per successor. The
 * state value's part may come as a number that names it one for one (the compiled step's leaf): it is encoded as
 * its text is, once per number, and needs no string lookup after that.
 */
import type { KeyPartSink } from './state-key.js';

/** A slot of the table that holds no entry. */
const SLOT_EMPTY = -1;

/**
 * Room for the states of most explorations from the start (entries, their parts, slots at most half full): a first
 * growth in the middle of a cold exploration deoptimises the code that adds states (`--trace-deopt`). Untouched pages
 * of a zeroed typed array cost no memory.
 */
const ENTRY_ROOM = 1 << 15;
const POOL_ROOM = 1 << 20;

/** String parts remembered per position (a part is mostly one of a few strings there: a state name, '', a flag). */
const RECENT = 4;

/** The empty string's code: it is interned first (number 0), since most keys have several parts that are ''. */
const EMPTY_CODE = -1;

/** What a remembered part's slot holds before its first part (no part is this object). */
const UNFILLED = Object.freeze({});

/** The separator of the joined key (see `keyParts`). */
const SEPARATOR = '|';

export class KeyTable implements KeyPartSink {
  private scratch = new Float64Array(64);
  private scratchBits = new Int32Array(this.scratch.buffer);
  private length = 0;
  private hash = 0;
  private pool = new Float64Array(0);
  private poolUsed = 0;
  /** Per entry: where its encoding starts in `pool`, its length, its hash, and the state it names. */
  private entryStart = new Int32Array(0);
  private entryLength = new Int32Array(0);
  private entryHash = new Int32Array(0);
  private entryState = new Int32Array(0);
  private entries = 0;
  private slots = new Int32Array(0);
  private readonly strings = new Map<string, number>();
  /** The interned texts, by number. */
  private readonly texts: string[] = [];
  /** Per state value number (`addValue`'s `valueId`), the code of its text. */
  private readonly valueCodes: number[] = [];
  /**
   * Whether no text encoded so far holds the separator: equal encodings then name equal joined keys and unequal ones
   * unequal keys, so `find`'s miss is a key not in the table under any encoding. Only ever turns false.
   */
  get exact(): boolean {
    return this.#exact;
  }
  #exact = true;
  /** Each entry's state by its joined key, once the table is not exact. */
  private byKey: Map<string, number> | null = null;
  /** Per position, the last `RECENT` string parts encoded there (compared by `===`) and their numbers. */
  private recentText: unknown[] = [];
  private recentNumber = new Float64Array(0);
  /** Per position, where the next string part remembered there goes. */
  private recentNext = new Uint8Array(0);

  constructor() {
    // The arrays that grow are stored a second time here on purpose: V8 compiles a field stored once as a constant,
    // and its first growth would then deoptimise every function that read it (the lookups, and the exploration's
    // loop that inlines them), in a cold run; stored twice, a field is compiled as one that changes.
    this.scratch = new Float64Array(64);
    this.scratchBits = new Int32Array(this.scratch.buffer);
    this.pool = new Float64Array(POOL_ROOM);
    this.entryStart = new Int32Array(ENTRY_ROOM);
    this.entryLength = new Int32Array(ENTRY_ROOM);
    this.entryHash = new Int32Array(ENTRY_ROOM);
    this.entryState = new Int32Array(ENTRY_ROOM);
    this.slots = new Int32Array(2 * ENTRY_ROOM).fill(SLOT_EMPTY);
    this.recentText = [];
    this.recentNumber = new Float64Array(0);
    this.recentNext = new Uint8Array(0);
    this.intern('');
  }

  /** Encodes `parts` as the current key, which `find` and `insert` then use. */
  encode(parts: ReadonlyArray<string | number>): void {
    this.begin();
    for (let index = 0; index < parts.length; index += 1) this.add(parts[index] as string | number);
    this.end();
  }

  /** Starts a key; its parts follow (`add`, `addValue`), then `end`. */
  begin(): void {
    this.length = 0;
  }

  /** The next part of the current key. */
  add(part: string | number): void {
    const index = this.length;
    if (index === this.scratch.length) this.growScratch();
    this.length = index + 1;
    // A non-negative number is its own code; `+ 0` makes `-0` the `0` its text is.
    this.scratch[index] =
      typeof part === 'number'
        ? part >= 0
          ? part + 0
          : this.textNumber(index, part)
        : part === ''
          ? EMPTY_CODE
          : this.textNumber(index, part);
  }

  /**
   * The state value's part, encoded as `valueKey` is: by `valueId` when there is one (it names `valueKey` one for one
   * in an exploration), which looks the text up once per number.
   */
  addValue(valueKey: string, valueId: number | undefined): void {
    if (valueId === undefined) {
      this.add(valueKey);
      return;
    }
    let code = this.valueCodes[valueId];
    if (code === undefined) {
      code = this.codeOf(valueKey);
      this.valueCodes[valueId] = code;
    }
    const index = this.length;
    if (index === this.scratch.length) this.growScratch();
    this.length = index + 1;
    this.scratch[index] = code;
  }

  /** Ends the current key, which `find` and `insert` then use. */
  end(): void {
    const length = this.length;
    const bits = this.scratchBits;
    const words = 2 * length;
    let hash = length ^ 0x811c9dc5;
    for (let index = 0; index < words; index += 1) hash = Math.imul(hash ^ (bits[index] as number), 0x01000193);
    this.hash = hash ^ (hash >>> 15);
  }

  /** The code of a part that is not a non-negative number, remembered per position by the part itself. */
  private textNumber(index: number, part: unknown): number {
    const base = index * RECENT;
    if (base + RECENT > this.recentNumber.length) this.growRecent(index + 1);
    const recent = this.recentText;
    for (let slot = base; slot < base + RECENT; slot += 1)
      if (recent[slot] === part) return this.recentNumber[slot] as number;
    const number = this.codeOf(part);
    const next = this.recentNext[index] as number;
    recent[base + next] = part;
    this.recentNumber[base + next] = number;
    this.recentNext[index] = (next + 1) % RECENT;
    return number;
  }

  /**
   * The code of a part's text as the joined key shows it: the number a text JavaScript writes a non-negative number
   * as, else the negative of the text's interned number (see the module comment).
   */
  private codeOf(part: unknown): number {
    const text = part === null || part === undefined ? '' : String(part);
    const number = Number(text);
    if (text !== '' && number >= 0 && String(number) === text) return number + 0;
    return -1 - this.intern(text);
  }

  /** The joined key of an entry (`insert`'s answer): its parts' texts joined by the separator. */
  keyOf(entry: number): string {
    return this.joined(this.pool, this.entryStart[entry] as number, this.entryLength[entry] as number);
  }

  /** The texts of `length` codes from `start` joined by the separator: the joined key they encode. */
  private joined(codes: Float64Array, start: number, length: number): string {
    const parts = new Array<string>(length);
    for (let index = 0; index < length; index += 1) {
      const code = codes[start + index] as number;
      parts[index] = code >= 0 ? String(code) : (this.texts[-1 - code] as string);
    }
    return parts.join(SEPARATOR);
  }

  private growScratch(): void {
    const scratch = new Float64Array(this.scratch.length * 2);
    scratch.set(this.scratch);
    this.scratch = scratch;
    this.scratchBits = new Int32Array(scratch.buffer);
  }

  private growRecent(positions: number): void {
    const size = Math.max(positions, 2 * (this.recentNext.length || 32));
    const numbers = new Float64Array(size * RECENT);
    numbers.set(this.recentNumber);
    this.recentNumber = numbers;
    const next = new Uint8Array(size);
    next.set(this.recentNext);
    this.recentNext = next;
    // A slot never filled holds `UNFILLED`, which no part is.
    const texts = new Array<unknown>(size * RECENT).fill(UNFILLED);
    this.recentText.forEach((text, slot) => (texts[slot] = text));
    this.recentText = texts;
  }

  /**
   * The state whose joined key is the current key's, or -1 when there is none. While the table is `exact`, that is
   * the state of an equal encoding; after, an encoding not in the table is looked up by its joined key too and, when
   * found, recorded as another name of its state.
   */
  find(): number {
    const found = this.probe();
    if (found >= 0 || this.#exact) return found;
    const byKey = (this.byKey ??= this.joinedKeys());
    const state = byKey.get(this.joined(this.scratch, 0, this.length));
    if (state === undefined) return -1;
    this.insert(state);
    return state;
  }

  /** The state of an entry with the current key's encoding, or -1. */
  private probe(): number {
    const slots = this.slots;
    const hashes = this.entryHash;
    const hash = this.hash;
    const mask = slots.length - 1;
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = slots[slot] as number;
      if (entry === SLOT_EMPTY) return -1;
      if (hashes[entry] === hash && this.matches(entry)) return this.entryState[entry] as number;
    }
  }

  /** Records the current key as a name of `state`; answers its entry (see `keyOf`). */
  insert(state: number): number {
    if (this.entries === this.entryState.length) this.growEntries();
    if (this.poolUsed + this.length > this.pool.length) {
      const pool = new Float64Array(Math.max(this.pool.length * 2, this.poolUsed + this.length));
      pool.set(this.pool);
      this.pool = pool;
    }
    const entry = this.entries++;
    // Copied part by part: a `subarray` to `set` from is an object made per new state.
    const pool = this.pool;
    const scratch = this.scratch;
    const start = this.poolUsed;
    for (let index = 0; index < this.length; index += 1) pool[start + index] = scratch[index] as number;
    this.entryStart[entry] = this.poolUsed;
    this.entryLength[entry] = this.length;
    this.entryHash[entry] = this.hash;
    this.entryState[entry] = state;
    this.poolUsed += this.length;
    // At most half full, so a probe ends soon.
    if (2 * this.entries > this.slots.length) this.rehash();
    else this.place(entry);
    const byKey = this.byKey;
    if (byKey !== null) {
      const key = this.keyOf(entry);
      if (!byKey.has(key)) byKey.set(key, state);
    }
    return entry;
  }

  /** Every entry's state by its joined key, for a table that is no longer exact. */
  private joinedKeys(): Map<string, number> {
    const byKey = new Map<string, number>();
    for (let entry = 0; entry < this.entries; entry += 1) {
      const key = this.keyOf(entry);
      if (!byKey.has(key)) byKey.set(key, this.entryState[entry] as number);
    }
    return byKey;
  }

  private matches(entry: number): boolean {
    const length = this.length;
    if (this.entryLength[entry] !== length) return false;
    const start = this.entryStart[entry] as number;
    const pool = this.pool;
    const scratch = this.scratch;
    for (let index = 0; index < length; index += 1) if (pool[start + index] !== scratch[index]) return false;
    return true;
  }

  private place(entry: number): void {
    const mask = this.slots.length - 1;
    let slot = (this.entryHash[entry] as number) & mask;
    while (this.slots[slot] !== SLOT_EMPTY) slot = (slot + 1) & mask;
    this.slots[slot] = entry;
  }

  private rehash(): void {
    this.slots = new Int32Array(this.slots.length * 2).fill(SLOT_EMPTY);
    for (let entry = 0; entry < this.entries; entry += 1) this.place(entry);
  }

  private growEntries(): void {
    const grow = (array: Int32Array) => {
      const next = new Int32Array(array.length * 2);
      next.set(array);
      return next;
    };
    this.entryStart = grow(this.entryStart);
    this.entryLength = grow(this.entryLength);
    this.entryHash = grow(this.entryHash);
    this.entryState = grow(this.entryState);
  }

  private intern(text: string): number {
    let number = this.strings.get(text);
    if (number === undefined) {
      number = this.strings.size;
      this.strings.set(text, number);
      this.texts.push(text);
      if (text.includes(SEPARATOR)) this.#exact = false;
    }
    return number;
  }
}
