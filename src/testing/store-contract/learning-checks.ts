/**
 * Contract checks on learning records: a record written by compare-and-set never loses a concurrent
 * writer's counts, is listed in key order and can be deleted, and keys are kept apart exactly.
 */
import { call, expectEqual, fail, type CheckContext } from './expectations.js';
import type { ContractCheckBody } from './journal-checks.js';

/** Read-modify-write of a counter record, retried on a lost compare-and-set as the learning layer does; the version it won from. */
async function addToRecord(context: CheckContext, key: string, tool: string, attempts: number): Promise<number | null> {
  for (let attempt = 0; attempt < attempts; attempt++) {
    const row = await context.store.readLearning(key);
    const counts = row === null ? {} : (JSON.parse(row.body) as Record<string, number>);
    const next = { ...counts, [tool]: (counts[tool] ?? 0) + 1 };
    if (await context.store.writeLearning(key, JSON.stringify(next), row?.version ?? null)) return row?.version ?? null;
  }
  return fail(
    context,
    `adding to learning record ${key} by compare-and-set`,
    `a write to succeed within ${attempts} attempts`,
    'every attempt refused (writeLearning never returns true for the version readLearning gave)',
  );
}

export const learningChecks: ContractCheckBody[] = [
  {
    name: 'learning: writeLearning is a compare-and-set on the version readLearning gives',
    async body(context) {
      const { store } = context;
      const key = '["support-bot",null]';
      const read = (which: string) =>
        call(context, `readLearning(${JSON.stringify(which)})`, () => store.readLearning(which));
      const write = (which: string, body: string, expected: number | null) =>
        call(context, `writeLearning(${JSON.stringify(which)}, …, ${expected})`, () =>
          store.writeLearning(which, body, expected),
        );
      expectEqual(context, 'readLearning of a key without a record', await read(key), null);
      expectEqual(context, 'writeLearning of a new key expecting none (null)', await write(key, '{"v":1}', null), true);
      const first = await read(key);
      expectEqual(context, 'readLearning after the first write (its body)', first?.body, '{"v":1}');
      if (typeof first?.version !== 'number')
        fail(context, 'readLearning after the first write (its version)', 'a number', JSON.stringify(first?.version));
      expectEqual(
        context,
        'writeLearning expecting no record when one exists',
        await write(key, '{"v":"lost"}', null),
        false,
      );
      expectEqual(
        context,
        'writeLearning with a version that is not the current one',
        await write(key, '{"v":"lost"}', first.version + 1000),
        false,
      );
      expectEqual(context, 'the record after two refused writes', await read(key), first);
      expectEqual(context, 'writeLearning with the current version', await write(key, '{"v":2}', first.version), true);
      const second = await read(key);
      expectEqual(context, 'readLearning after the second write (its body)', second?.body, '{"v":2}');
      if (typeof second?.version !== 'number' || second.version === first.version)
        fail(
          context,
          'the version after a write',
          `a number other than ${first.version}`,
          JSON.stringify(second?.version),
        );
      expectEqual(
        context,
        'writeLearning with the version the last write replaced',
        await write(key, '{"v":"lost"}', first.version),
        false,
      );
      expectEqual(
        context,
        'readLearning of a key that only differs in case (keys are exact)',
        await read(key.toUpperCase()),
        null,
      );
      expectEqual(
        context,
        'readLearning of the key for a tenant (records are per key)',
        await read('["support-bot","acme"]'),
        null,
      );
    },
  },
  {
    name: 'learning: concurrent writers never lose a count',
    async body(context) {
      const writers = Array.from({ length: context.concurrency }, (_, index) => `tool-${index % 3}`);
      const attempts = context.concurrency * 20;
      const wonFrom: (number | null)[] = [];
      await call(context, `${writers.length} writers adding one each at once (Promise.all)`, () =>
        Promise.all(
          writers.map(async (tool) => {
            wonFrom.push(await addToRecord(context, 'busy', tool, attempts));
            wonFrom.push(await addToRecord(context, 'busy', tool, attempts));
          }),
        ),
      );
      const row = await call(context, 'readLearning after the writers', () => context.store.readLearning('busy'));
      const expected: Record<string, number> = {};
      for (const tool of writers) expected[tool] = (expected[tool] ?? 0) + 2;
      const counts = row === null ? null : (JSON.parse(row.body) as Record<string, number>);
      expectEqual(
        context,
        `the record after ${writers.length} writers added two each`,
        counts === null ? null : Object.fromEntries(Object.entries(counts).sort(([a], [b]) => (a < b ? -1 : 1))),
        Object.fromEntries(Object.entries(expected).sort(([a], [b]) => (a < b ? -1 : 1))),
      );
      const repeated = wonFrom.filter((version, index) => wonFrom.indexOf(version) !== index);
      expectEqual(
        context,
        'versions two successful writeLearning calls both expected (a lost update each)',
        repeated,
        [],
      );
    },
  },
  {
    name: 'learning: listLearning lists every record in key order and deleteLearning removes one',
    async body(context) {
      const { store } = context;
      expectEqual(
        context,
        'listLearning of an empty store',
        await call(context, 'listLearning()', () => store.listLearning()),
        [],
      );
      for (const key of ['["b",null]', '["a","t2"]', '["a",null]', '__proto__'])
        expectEqual(
          context,
          `writeLearning(${JSON.stringify(key)}, …, null)`,
          await call(context, `writeLearning(${JSON.stringify(key)})`, () =>
            store.writeLearning(key, `{"k":${JSON.stringify(key)}}`, null),
          ),
          true,
        );
      const listed = await call(context, 'listLearning()', () => store.listLearning());
      expectEqual(
        context,
        'the keys listLearning gives (ordered by key)',
        listed.map((row) => row.key),
        ['["a","t2"]', '["a",null]', '["b",null]', '__proto__'],
      );
      expectEqual(context, 'the body listLearning gives for __proto__', listed[3]?.body, '{"k":"__proto__"}');
      if (typeof listed[0]?.version !== 'number')
        fail(context, 'the version listLearning gives', 'a number', JSON.stringify(listed[0]?.version));
      expectEqual(
        context,
        'deleteLearning of an existing key',
        await call(context, 'deleteLearning', () => store.deleteLearning('["a",null]')),
        true,
      );
      expectEqual(
        context,
        'deleteLearning of a key already deleted',
        await call(context, 'deleteLearning', () => store.deleteLearning('["a",null]')),
        false,
      );
      expectEqual(
        context,
        'the keys after one was deleted',
        (await call(context, 'listLearning()', () => store.listLearning())).map((row) => row.key),
        ['["a","t2"]', '["b",null]', '__proto__'],
      );
      expectEqual(
        context,
        'writeLearning of a deleted key expecting none (null): it starts again',
        await call(context, 'writeLearning', () => store.writeLearning('["a",null]', '{"again":true}', null)),
        true,
      );
    },
  },
];
