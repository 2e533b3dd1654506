import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  isLoopstateErrorCode,
  LOOPSTATE_ERROR_CODES,
  LoopstateError,
  ModelCallError,
  type ModelErrorKind,
} from 'loopstate';

const root = join(import.meta.dirname, '..', '..');
const page = readFileSync(join(root, 'docs', 'reference', 'errors.md'), 'utf8');

/** The codes the page documents: the first cell of each table row. */
function documentedCodes(text: string): string[] {
  return [...text.matchAll(/^\| `([a-z_]+)` \|/gm)].map((match) => match[1] ?? '');
}

function sourceFiles(folder: string): string[] {
  return readdirSync(folder, { withFileTypes: true }).flatMap((entry) => {
    const path = join(folder, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

describe('LoopstateErrorCode', () => {
  it('has a row on docs/reference/errors.md for each code, in the same order, and no row for anything else', () => {
    expect(documentedCodes(page)).toEqual([...LOOPSTATE_ERROR_CODES]);
  });

  it('lists no code twice', () => {
    expect(new Set(LOOPSTATE_ERROR_CODES).size).toBe(LOOPSTATE_ERROR_CODES.length);
  });

  it('lists only codes some error in src uses (as a literal, or through a model_ or cli_ template)', () => {
    const list = join(root, 'src', 'contracts', 'error-codes.ts');
    const sources = sourceFiles(join(root, 'src'))
      .filter((path) => path !== list)
      .map((path) => readFileSync(path, 'utf8'));
    const templated = (code: string) =>
      (code.startsWith('model_') && sources.some((text) => text.includes('`model_${'))) ||
      (code.startsWith('cli_') && sources.some((text) => text.includes('`cli_${')));
    const unused = LOOPSTATE_ERROR_CODES.filter(
      (code) => !templated(code) && !sources.some((text) => text.includes(`'${code}'`)),
    );
    expect(unused, `codes no source file in ${relative(root, join(root, 'src'))} uses`).toEqual([]);
  });

  it('holds the code of every model error kind', () => {
    const kinds: ModelErrorKind[] = [
      'rate_limited',
      'server',
      'timeout',
      'connection',
      'bad_request',
      'auth',
      'refused',
      'unknown',
    ];
    for (const kind of kinds) expect(isLoopstateErrorCode(new ModelCallError({ kind, message: 'x' }).code)).toBe(true);
  });

  it('is what LoopstateError takes: a code outside the union does not type-check', () => {
    // @ts-expect-error -- 'not_a_code' is not a LoopstateErrorCode; the type-check of this file fails if it were accepted.
    const error = new LoopstateError({ code: 'not_a_code', message: 'x' });
    expect(isLoopstateErrorCode(error.code)).toBe(false);
    expect(isLoopstateErrorCode('run_busy')).toBe(true);
    expect(isLoopstateErrorCode(undefined)).toBe(false);
  });
});
