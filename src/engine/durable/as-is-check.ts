/**
 * A fast path in front of zod for persisted records: whether a freshly parsed JSON value is one that a record
 * schema accepts and would give back unchanged (same keys in the same order, same values), so the value can be
 * used as it is and zod's copy skipped. A resume decodes the run record, the snapshot and the events after it on
 * every start; zod's walk and copy of them was a large part of a resume's fixed cost.
 *
 * The check is compiled once per schema from zod's own definition (so a schema change needs no change here) and
 * is conservative: it answers yes only where zod would surely accept the value and return an equal one. Anything
 * it does not know (a transform, a refinement, a check it has no rule for), a key zod would drop or move, a
 * `__proto__` key: it answers no, and the caller runs zod, which accepts or names the field that is wrong. So the
 * errors a bad record gets are zod's, as before.
 */
import type { z } from 'zod';
import { idRecordValueSchema } from './id-record.js';

/** zod accepts the value as it is; it may not (or may, but change it); it surely refuses it. */
const ACCEPT = 0;
const UNSURE = 1;
const REJECT = 2;
type Verdict = typeof ACCEPT | typeof UNSURE | typeof REJECT;

/**
 * Checks a value; `fixes` collects what makes it what zod would return (a record keyed by ids without its
 * prototype, see id-record.ts; an object's keys in zod's order), made only once the whole value is accepted.
 */
type Check = (value: unknown, fixes: (() => void)[]) => Verdict;

/** The zod definition fields the checks read (zod 4's `_zod.def`). */
interface Definition {
  type: string;
  checks?: readonly { _zod: { def: CheckDefinition } }[];
  shape?: Record<string, z.ZodType>;
  catchall?: z.ZodType;
  element?: z.ZodType;
  innerType?: z.ZodType;
  options?: readonly z.ZodType[];
  discriminator?: string;
  values?: readonly unknown[];
  entries?: Record<string, unknown>;
  keyType?: z.ZodType;
  valueType?: z.ZodType;
  /** A check or format zod keeps on the type itself (`z.int()`, `z.email()`, `z.iso.datetime()`…), not in `checks`. */
  check?: string;
  format?: string;
  /** False for `z.xor`: zod refuses a value two options accept. */
  inclusive?: boolean;
}
interface CheckDefinition {
  check: string;
  format?: string;
  value?: unknown;
  inclusive?: boolean;
  minimum?: number;
  maximum?: number;
}

const definitionOf = (schema: z.ZodType): Definition => (schema as unknown as { _zod: { def: Definition } })._zod.def;
const isObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && !Array.isArray(value);
const unsure: Check = () => UNSURE;
const accept: Check = () => ACCEPT;

const compiled = new WeakMap<z.ZodType, Check>();

/**
 * Whether zod would accept `value` (a value just parsed from JSON, owned by the caller) with `schema` and give
 * it back unchanged; when it does, `value` is what zod would return (its records keyed by ids are made
 * prototype-less in place, as zod's are, and an object whose keys stand in another order than zod's is put in
 * zod's order). False means only "run zod": it may still accept.
 * @example
 * const value: unknown = JSON.parse(body);
 * const record = passesAsIs(runRecordSchema, value) ? (value as RunRecord) : runRecordSchema.parse(value);
 */
export function passesAsIs(schema: z.ZodType, value: unknown): boolean {
  const fixes: (() => void)[] = [];
  if (checkOf(schema)(value, fixes) !== ACCEPT) return false;
  for (const fix of fixes) fix();
  return true;
}

function checkOf(schema: z.ZodType): Check {
  let check = compiled.get(schema);
  if (check === undefined) {
    // A schema that contains itself (z.lazy) is not compiled: its check is `unsure` until it is done.
    compiled.set(schema, unsure);
    check = compile(schema);
    compiled.set(schema, check);
  }
  return check;
}

/** The check of a primitive's zod checks (`.int()`, `.min()`, …): null when one of them has no rule here. */
function refinementsOf(definition: Definition): ((value: never) => boolean) | null {
  const rules: ((value: never) => boolean)[] = [];
  for (const { _zod } of definition.checks ?? []) {
    const { check, format, value, inclusive, minimum, maximum } = _zod.def;
    if (check === 'number_format' && format === 'safeint') rules.push((input: number) => Number.isSafeInteger(input));
    else if (check === 'greater_than' && typeof value === 'number')
      rules.push(inclusive ? (input: number) => input >= value : (input: number) => input > value);
    else if (check === 'less_than' && typeof value === 'number')
      rules.push(inclusive ? (input: number) => input <= value : (input: number) => input < value);
    else if (check === 'min_length' && typeof minimum === 'number')
      rules.push((input: { length: number }) => input.length >= minimum);
    else if (check === 'max_length' && typeof maximum === 'number')
      rules.push((input: { length: number }) => input.length <= maximum);
    else return null;
  }
  return rules.length === 0 ? () => true : (input) => rules.every((rule) => rule(input));
}

const CHECKED_HERE: ReadonlySet<string> = new Set(['string', 'number', 'boolean', 'array']);

function compile(schema: z.ZodType): Check {
  const idValue = idRecordValueSchema(schema);
  if (idValue !== undefined) return idRecordCheck(checkOf(idValue));
  const definition = definitionOf(schema);
  // A refinement (`.superRefine`, `.refine`) on anything but a primitive or an array (their checks are compiled
  // below) is a rule only zod knows: such a value is zod's to pass.
  if ((definition.checks?.length ?? 0) > 0 && !CHECKED_HERE.has(definition.type)) return unsure;
  // So is a check or format on the type itself (`z.int()`, `z.email()`…) and an exclusive union (`z.xor`). Not a
  // discriminated union (zod marks it exclusive too): zod takes the one option its discriminator's value names, and
  // the options' values differ (zod refuses duplicates), so the option that accepts a value is that one.
  if (
    definition.check !== undefined ||
    definition.format !== undefined ||
    (definition.inclusive === false && definition.discriminator === undefined)
  )
    return unsure;
  switch (definition.type) {
    case 'unknown':
    case 'any':
      return accept;
    case 'string':
    case 'number':
    case 'boolean': {
      const type = definition.type;
      const refined = refinementsOf(definition);
      if (refined === null) return unsure;
      // JSON gives finite numbers only, as zod's `z.number()` wants them.
      return (value) => (typeof value !== type ? REJECT : refined(value as never) ? ACCEPT : REJECT);
    }
    case 'null':
      return (value) => (value === null ? ACCEPT : REJECT);
    case 'literal': {
      const values = definition.values ?? [];
      return (value) => (values.includes(value) ? ACCEPT : REJECT);
    }
    case 'enum': {
      const values = Object.values(definition.entries ?? {});
      return (value) => (values.includes(value) ? ACCEPT : REJECT);
    }
    case 'nullable': {
      const inner = checkOf(definition.innerType!);
      return (value, fixes) => (value === null ? ACCEPT : inner(value, fixes));
    }
    case 'optional': {
      const inner = checkOf(definition.innerType!);
      return (value, fixes) => (value === undefined ? ACCEPT : inner(value, fixes));
    }
    case 'array':
      return (definition.checks?.length ?? 0) > 0 ? unsure : arrayCheck(checkOf(definition.element!));
    case 'object':
      return objectCheck(definition);
    case 'record': {
      const keyDefinition = definitionOf(definition.keyType!);
      if (keyDefinition.type !== 'string' || (keyDefinition.checks?.length ?? 0) > 0) return unsure;
      return recordCheck(checkOf(definition.valueType!));
    }
    case 'union':
      return unionCheck(definition);
    default:
      // A transform, a pipe, a refinement, a default, z.custom…: only zod knows what it gives.
      return unsure;
  }
}

function arrayCheck(element: Check): Check {
  return (value, fixes) => {
    if (!Array.isArray(value)) return REJECT;
    let verdict: Verdict = ACCEPT;
    for (const item of value) {
      const itemVerdict = element(item, fixes);
      if (itemVerdict === REJECT) return REJECT;
      if (itemVerdict === UNSURE) verdict = UNSURE;
    }
    return verdict;
  };
}

/**
 * An object as zod 4 returns it: the shape's keys in the shape's order, then (loose objects) the others in the
 * input's order. An object whose keys stand otherwise passes once put in that order.
 */
function objectCheck(definition: Definition): Check {
  const shape = definition.shape ?? {};
  const keys = Object.keys(shape);
  const checks = keys.map((key) => checkOf(shape[key]!));
  const optional = keys.map((key) => definitionOf(shape[key]!).type === 'optional');
  const place = new Map(keys.map((key, index) => [key, index]));
  const catchall = definition.catchall === undefined ? 'strip' : definitionOf(definition.catchall).type;
  // Strict objects refuse other keys, loose ones keep them as they are; any other catchall is zod's to run.
  if (catchall !== 'never' && catchall !== 'unknown' && catchall !== 'strip') return unsure;
  return (value, fixes) => {
    if (!isObject(value)) return Array.isArray(value) ? UNSURE : REJECT;
    let verdict: Verdict = ACCEPT;
    let last = -1;
    let others = false;
    let inOrder = true;
    for (const key of Object.keys(value)) {
      const index = place.get(key);
      if (index === undefined) {
        if (catchall === 'never') return REJECT;
        // Dropped (strip) or set through the prototype's setter (`__proto__`) by zod: not as it is.
        if (catchall === 'strip' || key === '__proto__') verdict = UNSURE;
        others = true;
      } else {
        if (index < last || others) inOrder = false;
        last = index;
      }
    }
    for (let index = 0; index < keys.length; index++) {
      const key = keys[index]!;
      if (!Object.hasOwn(value, key)) {
        // An absent key zod may fill in (`z.unknown()` takes undefined): zod's to say.
        if (!optional[index]) verdict = UNSURE;
        continue;
      }
      const keyVerdict = checks[index]!(value[key], fixes);
      if (keyVerdict === REJECT) return REJECT;
      if (keyVerdict === UNSURE) verdict = UNSURE;
    }
    if (verdict === ACCEPT && !inOrder) fixes.push(() => putInOrder(value, keys));
    return verdict;
  };
}

/** The object's keys as zod 4 orders them: the shape's (those present) in the shape's order, then the others as they were. */
function putInOrder(value: Record<string, unknown>, shapeKeys: readonly string[]): void {
  const entries = Object.entries(value);
  for (const [key] of entries) delete value[key];
  for (const key of shapeKeys) {
    const entry = entries.find(([own]) => own === key);
    if (entry !== undefined) value[key] = entry[1];
  }
  for (const [key, item] of entries) if (!Object.hasOwn(value, key)) value[key] = item;
}

/** `z.record(z.string(), value)`: a new object with the same keys, but `__proto__`, which zod drops. */
function recordCheck(entry: Check): Check {
  return (value, fixes) => {
    if (!isObject(value)) return Array.isArray(value) ? UNSURE : REJECT;
    let verdict: Verdict = ACCEPT;
    for (const key of Object.keys(value)) {
      if (key === '__proto__') verdict = UNSURE;
      const entryVerdict = entry(value[key], fixes);
      if (entryVerdict === REJECT) return REJECT;
      if (entryVerdict === UNSURE) verdict = UNSURE;
    }
    return verdict;
  };
}

/** `idRecordSchema(value)`: every own key kept, the object without a prototype (made so once all is accepted). */
function idRecordCheck(entry: Check): Check {
  return (value, fixes) => {
    if (!isObject(value)) return REJECT;
    let verdict: Verdict = ACCEPT;
    for (const key of Object.keys(value)) {
      const entryVerdict = entry(value[key], fixes);
      if (entryVerdict === REJECT) return REJECT;
      if (entryVerdict === UNSURE) verdict = UNSURE;
    }
    if (verdict === ACCEPT) fixes.push(() => Object.setPrototypeOf(value, null));
    return verdict;
  };
}

/**
 * zod 4 returns the first option that accepts (a discriminated union: the one its discriminator names). The
 * value passes when an option accepts it as it is and every option before it surely refuses it.
 */
function unionCheck(definition: Definition): Check {
  const options = (definition.options ?? []).map((option) => checkOf(option));
  return (value, fixes) => {
    for (const option of options) {
      const own: (() => void)[] = [];
      const verdict = option(value, own);
      if (verdict === REJECT) continue;
      if (verdict === ACCEPT) fixes.push(...own);
      return verdict;
    }
    return REJECT;
  };
}
