/**
 * Keeps the README true: every ```ts block is marked `<!-- snippet: run -->` (type-checked, then
 * run) or `<!-- snippet: not run -->`. Runnable snippets import `loopstate` and its subpaths, which resolve
 * to this repo's sources (tsconfig's `paths`, vitest's aliases); the snippet is type-checked with the
 * project's compiler options and imported, so a failed `assert` fails here.
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';

const repoRoot = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
// Outside tsconfig's include and git-ignored: written for this test only, removed after it. One folder per
// process, so two test runs in one checkout never remove each other's files.
const snippetDir = join(repoRoot, `.readme-snippets-${process.pid}`);

interface Snippet {
  index: number;
  line: number;
  marker: 'run' | 'not run' | null;
  code: string;
}

/** The ```ts blocks of a Markdown text, each with the snippet marker on the line before its fence. */
export function extractTsSnippets(markdown: string): Snippet[] {
  const lines = markdown.split('\n');
  const snippets: Snippet[] = [];
  for (let index = 0; index < lines.length; index++) {
    if (lines[index]?.trim() !== '```ts') continue;
    const markerMatch = /^<!-- snippet: (run|not run) -->$/.exec(lines[index - 1]?.trim() ?? '');
    const body: string[] = [];
    let end = index + 1;
    for (; end < lines.length && lines[end]?.trim() !== '```'; end++) body.push(lines[end] ?? '');
    snippets.push({ index: snippets.length, line: index + 1, marker: (markerMatch?.[1] as Snippet['marker'] | undefined) ?? null, code: body.join('\n') });
    index = end;
  }
  return snippets;
}

function typeCheck(files: readonly string[]): string[] {
  const configFile = ts.readConfigFile(join(repoRoot, 'tsconfig.json'), (path) => ts.sys.readFile(path));
  const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, repoRoot);
  const program = ts.createProgram({ rootNames: [...files], options: { ...parsed.options, noEmit: true } });
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const where = diagnostic.file && diagnostic.start !== undefined ? diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start) : null;
    const name = diagnostic.file ? diagnostic.file.fileName.replace(`${repoRoot}/`, '') : '';
    return `${name}${where ? `:${where.line + 1}:${where.character + 1}` : ''} ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n')}`;
  });
}

const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
const snippets = extractTsSnippets(readme);
const runnable = snippets.filter((snippet) => snippet.marker === 'run');
const fileOf = (snippet: Snippet) => join(snippetDir, `readme-snippet-${snippet.index + 1}.ts`);

afterAll(() => rmSync(snippetDir, { recursive: true, force: true }));

describe('extractTsSnippets', () => {
  it('finds ts blocks with their markers and skips other languages', () => {
    const markdown = ['<!-- snippet: run -->', '```ts', 'a();', '```', '```sh', 'npm test', '```', '```ts', 'b();', '```'].join('\n');
    expect(extractTsSnippets(markdown)).toEqual([
      { index: 0, line: 2, marker: 'run', code: 'a();' },
      { index: 1, line: 8, marker: null, code: 'b();' },
    ]);
  });
});

describe('README snippets', () => {
  it('marks every ts snippet as run or not run, and runs some', () => {
    expect(snippets.filter((snippet) => snippet.marker === null).map((snippet) => `README.md:${snippet.line}`)).toEqual([]);
    expect(runnable.length).toBeGreaterThanOrEqual(4);
  });

  it('type-checks every runnable snippet against the sources', () => {
    mkdirSync(snippetDir, { recursive: true });
    for (const snippet of runnable) writeFileSync(fileOf(snippet), `${snippet.code}\nexport {};\n`);
    expect(typeCheck(runnable.map(fileOf))).toEqual([]);
  }, 60_000);

  it.each(runnable.map((snippet) => [snippet.line, snippet] as const))('runs the snippet at README.md:%i', async (_line, snippet) => {
    mkdirSync(snippetDir, { recursive: true });
    writeFileSync(fileOf(snippet), `${snippet.code}\nexport {};\n`);
    await expect(import(pathToFileURL(fileOf(snippet)).href)).resolves.toBeDefined();
  });
});
