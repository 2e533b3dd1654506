import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { MissingDependencyError } from '../contracts/errors.js';
import { isMissingPackage, loadPeer, loadPeerAsync } from './peer-dependency.js';

const peer = {
  packageName: 'loopstate-no-such-package',
  installCommand: 'npm install loopstate-no-such-package',
  feature: 'aStore',
};
const require = createRequire(import.meta.url);

describe('loadPeer', () => {
  it('turns a package that is not installed into missing_dependency naming the install command (require)', () => {
    const error = (() => {
      try {
        loadPeer(() => require('loopstate-no-such-package'), peer);
      } catch (thrown) {
        return thrown;
      }
    })();
    expect(error).toBeInstanceOf(MissingDependencyError);
    expect(error).toMatchObject({
      code: 'missing_dependency',
      packageName: 'loopstate-no-such-package',
      installCommand: 'npm install loopstate-no-such-package',
    });
    expect((error as Error).message).toBe(
      'aStore needs the package loopstate-no-such-package, which is not installed: run `npm install loopstate-no-such-package`',
    );
  });

  it('does the same for import()', async () => {
    await expect(loadPeerAsync(() => import('loopstate-no-such-package' as string), peer)).rejects.toMatchObject({
      code: 'missing_dependency',
    });
  });

  it("rethrows any other failure as it is, and a missing module that is the package's own import", () => {
    const broken = new Error('Module did not self-register');
    expect(() =>
      loadPeer(() => {
        throw broken;
      }, peer),
    ).toThrow(broken);
    const inner = Object.assign(new Error("Cannot find module 'bindings'"), { code: 'MODULE_NOT_FOUND' });
    expect(isMissingPackage(inner, 'better-sqlite3')).toBe(false);
    expect(() =>
      loadPeer(
        () => {
          throw inner;
        },
        { ...peer, packageName: 'better-sqlite3' },
      ),
    ).toThrow(inner);
  });

  it('returns what the load returns', () => {
    expect(loadPeer(() => 42, peer)).toBe(42);
  });
});
