import { describe, expect, it } from 'vitest';
import { parseOptions, parseTarget, unknownToolIssues } from './mcp-target.js';

describe('parseTarget and parseOptions', () => {
  it('tells stdio from HTTP targets and names every bad field', () => {
    expect(parseTarget({ command: 'node', args: ['s.js'] })).toEqual({
      kind: 'stdio',
      command: 'node',
      args: ['s.js'],
      env: {},
      cwd: undefined,
    });
    expect(parseTarget({ url: new URL('http://127.0.0.1:1/mcp') })).toMatchObject({ kind: 'http', headers: {} });
    expect(() => parseTarget({ command: '' })).toThrow(/target\.command: expected the command/);
    expect(() => parseTarget({ command: 'node', env: { TOKEN: 1 } })).toThrow(/target\.env\.TOKEN: expected a string/);
    expect(() => parseTarget({ url: 'not a url' })).toThrow(/target\.url: expected an http/);
    expect(() => parseTarget({ url: 'http://x', header: {} })).toThrow(/header/);
    expect(() => parseTarget('node server.js')).toThrow(/target: expected \{ command/);
  });

  it('checks the options, and the tool names in them against what the server offers', () => {
    expect(() => parseOptions({ access: { a: 'admin' } })).toThrow(/options\.access\.a/);
    expect(() => parseOptions({ include: ['a'], exclude: ['b'] })).toThrow(/include or exclude, not both/);
    expect(() => parseOptions({ timeoutMs: 0 })).toThrow(/options\.timeoutMs/);
    expect(() => parseOptions({ acess: {} })).toThrow(/acess/);
    expect(parseOptions(undefined)).toEqual({});
    expect(unknownToolIssues({ access: { b: 'read', z: 'read' }, exclude: ['a', 'y'] }, ['a', 'b'])).toEqual([
      { path: 'options.access.z', message: 'no tool "z" on the server; it offers: a, b' },
      { path: 'options.exclude.1', message: 'no tool "y" on the server; it offers: a, b' },
    ]);
  });
});
