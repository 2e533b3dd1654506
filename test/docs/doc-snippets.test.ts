/**
 * Keeps the docs true: every ```ts block of README.md, CONTRIBUTING.md, CHANGELOG.md and docs/**\/*.md is
 * marked `<!-- snippet: run -->` (type-checked, then run) or `<!-- snippet: not run -->`. Runnable snippets
 * import `loopstate` and its subpaths, which resolve to this repo's sources (tsconfig's `paths`, vitest's
 * aliases); they are type-checked together with the project's compiler options, each error named by the
 * Markdown file and line it comes from, then imported one by one, so a failed `assert` fails here.
 */
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import ts from 'typescript';
import { afterAll, describe, expect, it } from 'vitest';
import { docFiles, extractTsSnippets, readDoc, repoRoot, type Snippet } from './markdown.js';

// Outside tsconfig's include and git-ignored: written for this test only, removed after it. One folder per
// process, so two test runs in one checkout never remove each other's files.
const snippetDir = join(repoRoot, `.readme-snippets-${process.pid}`);

interface DocSnippet extends Snippet {
  file: string;
  /** Where the snippet is written: one file per snippet, named after its Markdown file and line. */
  path: string;
}

const snippets: DocSnippet[] = docFiles().flatMap((file) =>
  extractTsSnippets(readDoc(file)).map((snippet) => ({
    ...snippet,
    file,
    path: join(snippetDir, `${file.replace(/[/.]/g, '_')}_${snippet.line}.ts`),
  })),
);
const runnable = snippets.filter((snippet) => snippet.marker === 'run');
const write = (snippet: DocSnippet) => {
  mkdirSync(snippetDir, { recursive: true });
  writeFileSync(snippet.path, `${snippet.code}\nexport {};\n`);
};

/** A diagnostic as `file.md:line:column message`: the snippet's first code line is the line after its fence. */
function typeCheck(files: readonly DocSnippet[]): string[] {
  const configFile = ts.readConfigFile(join(repoRoot, 'tsconfig.json'), (path) => ts.sys.readFile(path));
  const parsed = ts.parseJsonConfigFileContent(configFile.config, ts.sys, repoRoot);
  const program = ts.createProgram({
    rootNames: files.map((snippet) => snippet.path),
    options: { ...parsed.options, noEmit: true },
  });
  const byPath = new Map(files.map((snippet) => [snippet.path, snippet]));
  return ts.getPreEmitDiagnostics(program).map((diagnostic) => {
    const message = ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n');
    if (!diagnostic.file || diagnostic.start === undefined) return message;
    const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start);
    const snippet = byPath.get(diagnostic.file.fileName);
    const where = snippet
      ? `${snippet.file}:${snippet.line + 1 + line}`
      : `${diagnostic.file.fileName.replace(`${repoRoot}/`, '')}:${line + 1}`;
    return `${where}:${character + 1} ${message}`;
  });
}

afterAll(() => rmSync(snippetDir, { recursive: true, force: true }));

describe('extractTsSnippets', () => {
  it('finds ts blocks with their markers and skips other languages', () => {
    const markdown = [
      '<!-- snippet: run -->',
      '```ts',
      'a();',
      '```',
      '```sh',
      'npm test',
      '```',
      '```ts',
      'b();',
      '```',
    ].join('\n');
    expect(extractTsSnippets(markdown)).toEqual([
      { index: 0, line: 2, marker: 'run', code: 'a();' },
      { index: 1, line: 8, marker: null, code: 'b();' },
    ]);
  });
});

describe('doc snippets', () => {
  it('marks every ts snippet of every doc as run or not run', () => {
    expect(
      snippets.filter((snippet) => snippet.marker === null).map((snippet) => `${snippet.file}:${snippet.line}`),
    ).toEqual([]);
  });

  it('runs snippets from the README and from the docs pages', () => {
    expect(runnable.filter((snippet) => snippet.file === 'README.md').length).toBeGreaterThanOrEqual(1);
    expect(
      new Set(runnable.filter((snippet) => snippet.file.startsWith('docs/')).map((snippet) => snippet.file)).size,
    ).toBeGreaterThanOrEqual(10);
  });

  it('names a type error by its Markdown file and line', () => {
    const broken: DocSnippet = {
      index: 0,
      line: 40,
      marker: 'run',
      code: "const n: number = 'not a number';",
      file: 'docs/example.md',
      path: join(snippetDir, 'broken_40.ts'),
    };
    write(broken);
    expect(typeCheck([broken])).toEqual([
      expect.stringMatching(/^docs\/example\.md:41:7 Type 'string' is not assignable to type 'number'/),
    ]);
  });

  it('type-checks every runnable snippet against the sources', () => {
    runnable.forEach(write);
    expect(typeCheck(runnable)).toEqual([]);
  }, 120_000);

  it.each(runnable.map((snippet) => [`${snippet.file}:${snippet.line}`, snippet] as const))(
    'runs the snippet at %s',
    async (_where, snippet) => {
      write(snippet);
      await expect(import(pathToFileURL(snippet.path).href)).resolves.toBeDefined();
    },
  );
});
