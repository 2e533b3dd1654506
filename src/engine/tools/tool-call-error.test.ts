import { describe, expect, it } from 'vitest';
import { LoopstateError } from '../../contracts/errors.js';
import { isCallerFault, ToolCallError } from './tool-call-error.js';

describe('ToolCallError', () => {
  it('is a LoopstateError with a code, a blame defaulting to the tool, and its name', () => {
    const error = new ToolCallError({ message: 'backend down' });
    expect(error).toBeInstanceOf(LoopstateError);
    expect(error).toMatchObject({
      name: 'ToolCallError',
      code: 'tool_call_failed',
      blame: 'tool',
      message: 'backend down',
    });
    expect(new ToolCallError({ message: 'no such user', blame: 'caller', toolCode: 'not_found' })).toMatchObject({
      code: 'tool_call_failed',
      toolCode: 'not_found',
      blame: 'caller',
    });
  });
});

describe('isCallerFault', () => {
  it('is true only for a ToolCallError blaming the caller', () => {
    expect(isCallerFault(new ToolCallError({ message: 'no such user', blame: 'caller' }))).toBe(true);
    expect(isCallerFault(new ToolCallError({ message: 'down' }))).toBe(false);
    expect(isCallerFault(Object.assign(new Error('not found'), { blame: 'caller' }))).toBe(false);
    expect(isCallerFault('caller')).toBe(false);
  });

  it('recognises the brand of another installed copy and never throws on hostile errors', () => {
    const foreign = Object.assign(new Error('no such user'), {
      [Symbol.for('loopstate.ToolCallError')]: true,
      blame: 'caller',
    });
    expect(isCallerFault(foreign)).toBe(true);
    const hostile = new Proxy(
      {},
      {
        get: () => {
          throw new Error('trap');
        },
      },
    );
    expect(isCallerFault(hostile)).toBe(false);
  });
});
