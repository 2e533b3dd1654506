/**
 * Tool-call ids as the loop uses them: unique within a reply. A provider may send an empty id or the
 * same id twice; the id is part of each call's idempotency key, so two different side effects would share
 * one key and one of them could be deduplicated away. The unique id is used everywhere after the reply
 * (the assistant message in the transcript, the tool results, traces), so the model still sees answers
 * that match its calls.
 */
import type { ToolCallRequest } from '../../contracts/model.js';

/**
 * The reply's calls with every empty or repeated id replaced by one unused in the reply (`call_<index>`,
 * or `<id>_<index>` for a repeat); calls that already had a unique id keep it. Returns `calls` itself
 * when nothing had to change.
 * @example
 * assignUniqueCallIds([{ id: '', name: 'pay', arguments: '{}' }, { id: '', name: 'pay', arguments: '{}' }]).map((call) => call.id)
 * // ['call_0', 'call_1']
 */
export function assignUniqueCallIds(calls: readonly ToolCallRequest[]): readonly ToolCallRequest[] {
  const taken = new Set<string>();
  const needsId = calls.map((call) => {
    const repeated = call.id === '' || taken.has(call.id);
    taken.add(call.id);
    return repeated;
  });
  if (!needsId.includes(true)) return calls;
  return calls.map((call, index) => {
    if (!needsId[index]) return call;
    const base = `${call.id === '' ? 'call' : call.id}_${index}`;
    let id = base;
    for (let suffix = 1; taken.has(id); suffix++) id = `${base}_${suffix}`;
    taken.add(id);
    return { ...call, id };
  });
}
