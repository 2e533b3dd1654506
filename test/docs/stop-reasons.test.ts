/**
 * The stop-reason tables of the README and of docs/reference/stop-reasons.md list exactly the closed union,
 * in its order, each with when it happens (and, on the reference page, the status the code gives it).
 */
import { describe, expect, it } from 'vitest';
import { STOP_REASONS } from 'loopstate';
import { statusOf } from '../../machines/index.js';
import { codeSpan, extractTables, readDoc } from './markdown.js';

const tableOf = (file: string) => extractTables(readDoc(file)).filter((row) => row.cells['stop reason'] !== undefined);

describe.each(['README.md', 'docs/reference/stop-reasons.md'])('the stop-reason table of %s', (file) => {
  const rows = tableOf(file);

  it('lists exactly STOP_REASONS, in order', () => {
    expect(rows.map((row) => codeSpan(row.cells['stop reason'] ?? ''))).toEqual([...STOP_REASONS]);
  });

  it('says when each one happens', () => {
    expect(rows.filter((row) => (row.cells.when ?? '').length < 20).map((row) => `${file}:${row.line}`)).toEqual([]);
  });
});

it('gives each stop reason the status the run reports', () => {
  const rows = tableOf('docs/reference/stop-reasons.md');
  expect(rows.map((row) => [codeSpan(row.cells['stop reason'] ?? ''), codeSpan(row.cells.status ?? '')])).toEqual(
    STOP_REASONS.map((reason) => [reason, statusOf(reason)]),
  );
});
