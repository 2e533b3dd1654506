/**
 * Type-level tests of typed output (checked by tsc in `npm test`), plus the run-time facts they rely on.
 */
import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import {
  createLoop,
  evaluators,
  LoopConfigError,
  type Evaluator,
  type LoopConfig,
  type RunResult,
} from '../../index.js';
import { reply, scriptedModel } from '../../testing/index.js';

const Order = z.object({ total: z.number(), currency: z.string().default('EUR') });
type Order = z.output<typeof Order>;
const model = () => scriptedModel([reply('Here you go:\n```json\n{"total": 3}\n```')]);

describe('typed output', () => {
  it('types result.output from a schema evaluator given alone (not in a list)', async () => {
    const loop = createLoop({ model: model(), evaluate: evaluators.schema(Order) });
    const result = await loop.run({ goal: 'Total?' });
    expectTypeOf(result.output).toEqualTypeOf<Order | null>();
    expectTypeOf(result.rawOutput).toEqualTypeOf<string | null>();
    expect(result.output).toEqual({ total: 3, currency: 'EUR' });
  });

  it('types result.output from the last typed evaluator of a list; json and judges keep it', async () => {
    const judge = evaluators.judge({
      model: scriptedModel([reply('{"passed": true, "reason": "ok"}')]),
      criteria: 'plausible',
    });
    const loop = createLoop({ model: model(), evaluate: [evaluators.json(), evaluators.schema(Order), judge] });
    const result = await loop.run({ goal: 'Total?' });
    expectTypeOf(result.output).toEqualTypeOf<Order | null>();
    expect(result.output?.total).toBe(3);
  });

  it('types each step of evaluators.chain from the one before it, with no annotation', async () => {
    const evaluate = evaluators.chain(
      evaluators.schema(Order),
      evaluators.rule((order) => {
        expectTypeOf(order).toEqualTypeOf<Order>();
        return order.total > 0;
      }, 'total must be positive'),
      evaluators.rule((order) => order.currency.length === 3, 'currency must be a code'),
    );
    evaluators.chain(
      evaluators.schema(Order),
      // @ts-expect-error the rule's parameter must match what the schema produces
      evaluators.rule((order: { name: string }) => order.name !== '', 'named'),
    );
    evaluators.chain(
      evaluators.schema(Order),
      // @ts-expect-error a property the schema does not produce
      evaluators.rule((order) => order.missing, 'missing'),
    );
    const loop = createLoop({ model: model(), evaluate });
    const result = await loop.run({ goal: 'Total?' });
    expectTypeOf(result.output).toEqualTypeOf<Order | null>();
    expect(result).toMatchObject({ stopReason: 'completed', output: { total: 3 } });
    expect(Object.isFrozen(evaluate)).toBe(true);
  });

  it('types a first rule of a chain as the raw text', () => {
    evaluators.chain(
      evaluators.rule((text) => {
        expectTypeOf(text).toEqualTypeOf<string>();
        return text !== '';
      }, 'non-empty'),
    );
  });

  it('types a workflow by its last task, including a task whose prompt is a function', async () => {
    const Draft = z.object({ body: z.string() });
    const loop = createLoop({
      model: scriptedModel([reply('{"total": 3}'), reply('{"body": "3 orders"}')]),
      tasks: [
        { id: 'count', prompt: 'Count', evaluate: evaluators.schema(Order) },
        {
          id: 'draft',
          prompt: ({ outputs }) => `Write about ${JSON.stringify(outputs.count)}`,
          evaluate: [evaluators.schema(Draft)],
        },
      ],
    });
    const result = await loop.run({ goal: 'Report' });
    expectTypeOf(result.output).toEqualTypeOf<{ body: string } | null>();
    expect(result.output).toEqual({ body: '3 orders' });
  });

  it('leaves output unknown without a typed evaluator, and for a config typed LoopConfig', async () => {
    const untyped = createLoop({ model: model() });
    expectTypeOf(untyped.run).returns.resolves.toEqualTypeOf<RunResult>();
    const config: LoopConfig = { model: model(), evaluate: [evaluators.schema(Order)] };
    expectTypeOf(createLoop(config).run).returns.resolves.toEqualTypeOf<RunResult>();
    expectTypeOf(
      createLoop({ model: model(), evaluate: [evaluators.json()] }).run,
    ).returns.resolves.toEqualTypeOf<RunResult>();
    expectTypeOf<RunResult['output']>().toBeUnknown();
    expect((await untyped.run({ goal: 'x' })).output).toBe('Here you go:\n```json\n{"total": 3}\n```');
  });

  it('still checks config fields at the type level', () => {
    // @ts-expect-error an unknown option is a type error, not only a run-time LoopConfigError
    expect(() => createLoop({ model: model(), limit: { maxSteps: 2 } })).toThrow(LoopConfigError);
  });

  it('accepts a single evaluator in a task and a list in the loop; refuses anything else by name', () => {
    const schemaEvaluator: Evaluator<unknown, Order> = evaluators.schema(Order);
    expect(() =>
      createLoop({ model: model(), tasks: [{ id: 'a', prompt: 'x', evaluate: schemaEvaluator }] }),
    ).not.toThrow();
    const bad = () => createLoop({ model: model(), evaluate: { name: 'x' } as unknown as Evaluator });
    expect(bad).toThrow(LoopConfigError);
    expect(bad).toThrow(/evaluate: expected an evaluator or an array of evaluators/);
  });
});
