/**
 * The `trim` strategy as a pure function of the messages: older tool results become short
 * markers, then older turns are dropped, until the request fits. A call and its results are kept
 * or dropped together, so a provider never sees an orphaned result or an unanswered call.
 */
import type { Message } from '../../contracts/model.js';
import { digest64 } from '../progress/digest.js';
import { estimateRequestTokens, messageChars } from '../runtime/transcript.js';
import { DROPPED_RESULT_PREFIX, DROPPED_TURNS_NOTE, droppedResultMarker, MEMORY_PREFIX } from '../prompts.js';

/**
 * The short id of an observation, as the trace's `tool-end` events name it (for a run that began with today's
 * digest; a run's tracker knows its own, see `TrimOptions.observationIdOf`).
 * @example
 * observationIdOf('{"status":"shipped"}') // 12 hex characters
 */
export function observationIdOf(content: string): string {
  return digest64(content).slice(0, 12);
}

/**
 * What trimming may not touch and how big a request may be.
 * @example
 * const options: TrimOptions = { ceilingTokens: 8_000, keepTurns: 4, fixedChars: 1_200, taskMessage: null };
 */
export interface TrimOptions {
  ceilingTokens: number;
  /** The last this-many assistant turns are kept whole while anything older can go. */
  keepTurns: number;
  /** Characters every request carries besides its messages (the tool specs). */
  fixedChars: number;
  /** The user message that states the current task; kept like the instructions. */
  taskMessage: Message | null;
  /** The run's observation ids (its tracker's), so a marker names a result as the trace does; `observationIdOf` when undefined. */
  observationIdOf?: (content: string) => string;
}

/**
 * A tool result `trim` replaced by a marker.
 * @example
 * const dropped: DroppedResult = { callId: 'c12', tool: 'lookup', observationId: '3f2a9c1b0d4e' };
 */
export interface DroppedResult {
  callId: string;
  tool: string;
  observationId: string;
}

/**
 * The outcome of a trim: the new messages, what went, and whether the request fits now.
 * @example
 * const { messages, fits, resultsDropped } = trimMessages(transcript.messages, options);
 */
export interface TrimResult {
  messages: Message[];
  tokensBefore: number;
  tokensAfter: number;
  resultsDropped: DroppedResult[];
  messagesDropped: number;
  fits: boolean;
}

/** A message, or an assistant message with the tool results that answer it: kept or dropped as one. */
interface Unit {
  messages: Message[];
  /** Never trimmed: instructions, the first user message, the task, a memory, the latest turn. */
  pinned: boolean;
  /** Inside the last `keepTurns` turns: trimmed only when the older turns were not enough. */
  recent: boolean;
  dropped: boolean;
}

/**
 * Groups each assistant message with the tool messages that follow it.
 * @example
 * groupTurns([user, assistantCallingC1, resultC1]) // [[user], [assistantCallingC1, resultC1]]
 */
export function groupTurns(messages: readonly Message[]): Message[][] {
  const groups: Message[][] = [];
  for (const message of messages) {
    const last = groups.at(-1);
    if (message.role === 'tool' && last?.[0]?.role === 'assistant') last.push(message);
    else groups.push([message]);
  }
  return groups;
}

function isAnswered(group: readonly Message[]): boolean {
  const head = group[0];
  if (head?.role !== 'assistant') return true;
  // Called for every turn of the transcript at every trim: a scan of the (few) results, no set built.
  return (head.toolCalls ?? []).every((call) =>
    group.some((message) => message.role === 'tool' && message.toolCallId === call.id),
  );
}

function isPinnedMessage(
  message: Message | undefined,
  taskMessage: Message | null,
  firstUser: Message | undefined,
): boolean {
  if (message === undefined) return false;
  if (message.role === 'system' || message === firstUser || message === taskMessage) return true;
  return message.role === 'user' && message.content.startsWith(MEMORY_PREFIX);
}

/**
 * Splits messages into units and marks what is pinned and what is recent.
 * @example
 * const recentUnits = unitsOf(messages, { keepTurns: 4, taskMessage: null }).filter((unit) => unit.recent);
 */
export function unitsOf(messages: readonly Message[], options: Pick<TrimOptions, 'keepTurns' | 'taskMessage'>): Unit[] {
  const firstUser = messages.find((message) => message.role === 'user');
  const groups = groupTurns(messages);
  const assistantGroups = groups.flatMap((group, index) => (group[0]?.role === 'assistant' ? [index] : []));
  const lastTurn = assistantGroups.at(-1) ?? groups.length;
  const firstRecent = assistantGroups.at(-Math.max(1, options.keepTurns)) ?? groups.length;
  return groups.map((group, index) => ({
    messages: group,
    // The latest turn holds results the model has not answered yet; an unanswered call is never split off.
    pinned: index >= lastTurn || !isAnswered(group) || isPinnedMessage(group[0], options.taskMessage, firstUser),
    recent: index >= firstRecent,
    dropped: false,
  }));
}

function droppedMarker(call: { id: string; name: string }, observationId: string): string {
  return droppedResultMarker(call.name, call.id, observationId);
}

/** Replaces the unit's tool results by markers; returns what it replaced. */
function markResults(unit: Unit, idOf: (content: string) => string): DroppedResult[] {
  const head = unit.messages[0];
  if (head?.role !== 'assistant') return [];
  // A turn marked at an earlier trim is met again at every trim after it: nothing to replace, nothing to copy.
  if (!unit.messages.some((message) => message.role === 'tool' && !message.content.startsWith(DROPPED_RESULT_PREFIX)))
    return [];
  const calls = new Map((head.toolCalls ?? []).map((call) => [call.id, call]));
  const dropped: DroppedResult[] = [];
  unit.messages = unit.messages.map((message) => {
    if (message.role !== 'tool' || message.content.startsWith(DROPPED_RESULT_PREFIX)) return message;
    const call = calls.get(message.toolCallId) ?? { id: message.toolCallId, name: 'a tool' };
    const observationId = idOf(message.content);
    dropped.push({ callId: call.id, tool: call.name, observationId });
    return { ...message, content: droppedMarker(call, observationId) };
  });
  return dropped;
}

/** The messages of the units, one note standing for each run of dropped units. */
function assemble(units: readonly Unit[]): Message[] {
  const messages: Message[] = [];
  let noted = false;
  for (const unit of units) {
    if (unit.dropped) {
      if (!noted) messages.push({ role: 'user', content: DROPPED_TURNS_NOTE });
      noted = true;
      continue;
    }
    noted = false;
    messages.push(...unit.messages);
  }
  return messages;
}

/**
 * Estimated input tokens of a request of these messages plus `fixedChars` (the tool specs).
 * @example
 * requestTokens([{ role: 'user', content: 'hi' }]) // 5
 */
export function requestTokens(messages: readonly Message[], fixedChars = 0): number {
  return estimateRequestTokens(
    messages.reduce((sum, message) => sum + messageChars(message), fixedChars),
    messages.length,
  );
}

/**
 * Makes the request fit `ceilingTokens` by, in order and only as far as needed: replacing the
 * tool results of turns older than the last `keepTurns` with markers naming their observation
 * id; dropping those older turns; then doing the same to the recent turns, oldest first. The
 * instructions, the first user message, the task, a summary memory and the latest turn (its tool
 * results are not answered yet) are never touched. `fits` is false when even that is not enough.
 * @example
 * const trimmed = trimMessages(messages, { ceilingTokens: 4_000, keepTurns: 4, fixedChars: 0, taskMessage: null });
 * if (!trimmed.fits) console.warn(`still ${trimmed.tokensAfter} tokens`);
 */
export function trimMessages(messages: readonly Message[], options: TrimOptions): TrimResult {
  const units = unitsOf(messages, options);
  const resultsDropped: DroppedResult[] = [];
  let messagesDropped = 0;
  // The request's size is kept as running totals, moved by what each step changed: reassembling and recounting
  // every message after each step made one trim cost messages × steps, and a long run trims at every step.
  let chars = messages.reduce((sum, message) => sum + messageChars(message), options.fixedChars);
  let count = messages.length;
  const tokensBefore = estimateRequestTokens(chars, count);
  let tokens = tokensBefore;
  let changed = false;
  const unitChars = (unit: Unit) => unit.messages.reduce((sum, message) => sum + messageChars(message), 0);
  const noteChars = messageChars({ role: 'user', content: DROPPED_TURNS_NOTE });
  const idOf = options.observationIdOf ?? observationIdOf;
  const drop = (index: number) => () => {
    const unit = units[index]!;
    if (unit.dropped) return;
    unit.dropped = true;
    messagesDropped += unit.messages.length;
    chars -= unitChars(unit);
    count -= unit.messages.length;
    // One note stands for each run of dropped units: this one starts a run, extends one, or joins two.
    const joined = (units[index - 1]?.dropped === true ? 1 : 0) + (units[index + 1]?.dropped === true ? 1 : 0);
    const notes = 1 - joined;
    chars += notes * noteChars;
    count += notes;
  };
  const mark = (index: number) => () => {
    const unit = units[index]!;
    const before = unit.dropped ? 0 : unitChars(unit);
    resultsDropped.push(...markResults(unit, idOf));
    if (!unit.dropped) chars += unitChars(unit) - before;
  };
  const isExchange = (index: number) => units[index]!.messages[0]?.role === 'assistant';
  const indices = units.map((_, index) => index);
  const older = indices.filter((index) => !units[index]!.pinned && !units[index]!.recent);
  const recent = indices.filter((index) => !units[index]!.pinned && units[index]!.recent);
  const steps = [
    // Older turns: every result marked before any turn is dropped.
    ...older.filter(isExchange).map(mark),
    ...older.map(drop),
    // Recent turns only when that was not enough: each marked, then dropped, oldest first.
    ...recent.flatMap((index) => (isExchange(index) ? [mark(index), drop(index)] : [drop(index)])),
  ];
  for (const step of steps) {
    if (tokens <= options.ceilingTokens) break;
    step();
    changed = true;
    tokens = estimateRequestTokens(chars, count);
  }
  return {
    messages: changed ? assemble(units) : [...messages],
    tokensBefore,
    tokensAfter: tokens,
    resultsDropped,
    messagesDropped,
    fits: tokens <= options.ceilingTokens,
  };
}
