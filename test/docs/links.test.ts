/**
 * Every relative link and image of the docs points at a file that exists, and every `#anchor` at a heading
 * of its page; public pages never cite the design notes, which do not ship.
 */
import { existsSync } from 'node:fs';
import { dirname, join, normalize } from 'node:path';
import { describe, expect, it } from 'vitest';
import { anchorsOf, docFiles, extractLinks, headingAnchor, readDoc, repoRoot } from './markdown.js';

describe('headingAnchor', () => {
  it("makes GitHub's anchors", () => {
    expect(headingAnchor('Distributed runs (DBOS)')).toBe('distributed-runs-dbos');
    expect(headingAnchor('The API in 30 seconds')).toBe('the-api-in-30-seconds');
  });
});

describe.each(docFiles())('%s', (file) => {
  const text = readDoc(file);

  it('links only to files and headings that exist', () => {
    const broken = extractLinks(text)
      .filter(({ target }) => !/^[a-z]+:/.test(target))
      .filter(({ target }) => {
        const [path = '', anchor] = target.split('#');
        const resolved = path === '' ? file : normalize(join(dirname(file), path));
        if (!existsSync(join(repoRoot, resolved))) return true;
        return anchor !== undefined && resolved.endsWith('.md') && !anchorsOf(readDoc(resolved)).has(anchor);
      })
      .map(({ target, line }) => `${file}:${line} ${target}`);
    expect(broken).toEqual([]);
  });

  it('never cites the design notes', () => {
    expect(text).not.toMatch(/DESIGN(\.md| §)/);
  });
});
