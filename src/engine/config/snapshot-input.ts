/**
 * Copies a config or run input into plain data before zod sees it. Two rules live here, so they hold
 * for every field at once: a key whose value is `undefined` is dropped (an explicit `undefined` means
 * "the default", never "off"), and a getter or Proxy that throws becomes an issue naming its field
 * instead of a raw throw. Objects the loop calls into (models, tools, evaluators, clocks, signals)
 * are kept by reference, so their `this` and private state are untouched.
 */
import { z } from 'zod';
import type { ConfigIssue } from '../../contracts/errors.js';
import { thrownMessage } from '../redaction/describe-thrown.js';

/** Tells which objects (never arrays) are kept as they are instead of being copied, by their path from the root. */
export type KeepByReference = (path: readonly PropertyKey[]) => boolean;

/**
 * The copied input, or the issues found while reading it.
 * @example
 * const { value, issues } = snapshotInput({ limits: { maxSteps: undefined } }, () => false); // value: { limits: {} }
 */
export interface InputSnapshot {
  value: unknown;
  issues: ConfigIssue[];
}

// Deeper than any config or conversation a person writes; a cycle or runaway nesting stops here.
const MAX_DEPTH = 64;

function isPlainObject(value: object): boolean {
  const prototype: unknown = Object.getPrototypeOf(value);
  return prototype === Object.prototype || prototype === null;
}

/**
 * Copies plain objects and arrays (own enumerable string keys, values read once), drops
 * `undefined`-valued keys of objects, and keeps every other value by reference.
 * @example
 * snapshotInput({ model, limits: { maxSteps: undefined, deadlineMs: 5_000 } }, (path) => path[0] === 'model')
 * // { value: { model, limits: { deadlineMs: 5000 } }, issues: [] }
 */
export function snapshotInput(input: unknown, keepByReference: KeepByReference): InputSnapshot {
  const issues: ConfigIssue[] = [];
  const ancestors = new Set<object>();
  const fail = (path: readonly PropertyKey[], message: string): undefined => {
    issues.push({ path: z.core.toDotPath([...path]), message });
    return undefined;
  };
  const copy = (value: unknown, path: PropertyKey[]): unknown => {
    if (typeof value !== 'object' || value === null) return value;
    let array: boolean;
    try {
      array = Array.isArray(value);
      // Arrays are always data; an object the caller keeps, or a class instance, is passed as it is.
      if (!array && (keepByReference(path) || !isPlainObject(value))) return value;
    } catch (error) {
      return fail(path, `could not be read: ${thrownMessage(error)}`);
    }
    if (ancestors.has(value)) return fail(path, 'refers to itself (a circular structure)');
    if (path.length >= MAX_DEPTH) return fail(path, `nested more than ${MAX_DEPTH} levels deep`);
    ancestors.add(value);
    try {
      return array ? copyArray(value as readonly unknown[], path) : copyObject(value, path);
    } finally {
      ancestors.delete(value);
    }
  };
  const copyArray = (array: readonly unknown[], path: PropertyKey[]): unknown[] | undefined => {
    let length: number;
    try {
      length = array.length;
    } catch (error) {
      return fail(path, `could not be read: ${thrownMessage(error)}`);
    }
    const result: unknown[] = [];
    for (let index = 0; index < length; index++) {
      try {
        result.push(copy(array[index], [...path, index]));
      } catch (error) {
        fail([...path, index], `could not be read: ${thrownMessage(error)}`);
      }
    }
    return result;
  };
  const copyObject = (object: object, path: PropertyKey[]): Record<string, unknown> | undefined => {
    let keys: string[];
    try {
      keys = Object.keys(object);
    } catch (error) {
      return fail(path, `could not be read: ${thrownMessage(error)}`);
    }
    const result: Record<string, unknown> = {};
    for (const key of keys) {
      let item: unknown;
      try {
        item = (object as Record<string, unknown>)[key];
      } catch (error) {
        fail([...path, key], `could not be read: ${thrownMessage(error)}`);
        continue;
      }
      if (item === undefined) continue;
      // defineProperty, so an own `__proto__` key stays a key (and is reported as unknown) instead of a prototype.
      Object.defineProperty(result, key, {
        value: copy(item, [...path, key]),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return result;
  };
  const value = copy(input, []);
  return { value, issues };
}
