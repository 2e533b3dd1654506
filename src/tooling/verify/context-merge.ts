/**
 * XState's `assign` (`Object.assign({}, context, update)`) for the loop's context, faster: V8 builds an object
 * literal of known fields far faster than it spreads or `Object.assign`s an 18-field object, and every context made
 * this way has one hidden class, so the guards and reducers that read them stay monomorphic.
 *
 * It is exact for contexts that are plain records of exactly these fields in this order, and updates that are plain
 * objects whose enumerable keys are all fields (as a reducer's object literal is): `createContextMerge` checks the
 * first context, which every later one descends from, and the merge falls back to `Object.assign` for good at the
 * first update of another kind, since its context, and every one made from it, could carry a key the literal drops.
 * (Symbol keys are not looked for: a context's fields are named.)
 */
import { copyContext } from '../../../actions/record-copy.js';
import type { LoopContext } from '../../../machines/types.js';

const FIELDS: readonly string[] = Object.keys(copyContext({} as LoopContext));
const IS_FIELD = new Set(FIELDS);

const sameFields = (context: object): boolean => {
  const keys = Object.keys(context);
  return (
    Object.getPrototypeOf(context) === Object.prototype &&
    keys.length === FIELDS.length &&
    keys.every((key, index) => key === FIELDS[index])
  );
};

export type ContextMerge = (context: LoopContext, update: Partial<LoopContext>) => LoopContext;

/** A merge for contexts descending from `first` (the machine's initial context) by the merges it returns. */
export function createContextMerge(first: LoopContext): ContextMerge {
  let fast = sameFields(first);
  return (context, update) => {
    if (fast && Object.getPrototypeOf(update) === Object.prototype) {
      const merged = copyContext(context) as unknown as Record<string, unknown>;
      let known = true;
      for (const key in update) {
        if (!IS_FIELD.has(key)) known = false;
        merged[key] = (update as Record<string, unknown>)[key];
      }
      if (known) return merged as unknown as LoopContext;
    }
    fast = false;
    return Object.assign({}, context, update);
  };
}
