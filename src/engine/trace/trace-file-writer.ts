/**
 * The JSON lines trace file sink: one event per line with a direct write per event (nothing is buffered in
 * the process, so a run killed mid-way leaves every event before the kill). Node's fs and path come from the
 * runtime probe, never an import, so the core stays loadable where there is no file system; there
 * `trace.file` is refused when the loop is created, saying so.
 */
import { nodeBuiltin } from '../host-runtime.js';
import type { TraceEvent } from '../../contracts/trace-schema.js';

/** The members of Node's fs and path the sink uses (the engine does not import Node's types). */
interface FileSystem {
  accessSync(path: string, mode: number): void;
  statSync(path: string, options: { throwIfNoEntry: false }): { isDirectory(): boolean } | undefined;
  openSync(path: string, flags: 'a'): number;
  writeSync(fd: number, text: string): number;
  closeSync(fd: number): void;
  constants: { W_OK: number };
}
interface Paths {
  resolve(path: string): string;
  dirname(path: string): string;
}

/** Node's fs and path where the runtime offers them (Node ≥ 20.16, Bun, Deno); null elsewhere. */
function fileSystem(): { fs: FileSystem; path: Paths } | null {
  const fs = nodeBuiltin<FileSystem>('node:fs');
  const path = nodeBuiltin<Paths>('node:path');
  return fs === undefined || path === undefined ? null : { fs, path };
}

/** Why `trace.file` cannot work in this runtime. */
const NO_FILE_SYSTEM =
  "this runtime offers no file system to the core (it needs Node's fs through process.getBuiltinModule: Node 20.16 or later, Bun or Deno); take the events with trace.onEvent instead";

/**
 * Why `path` cannot take a trace, checked when the loop is created (no file is created then); null when it can.
 * @example
 * traceFileProblem('/no/such/dir/run.jsonl') // 'directory /no/such/dir does not exist'
 */
export function traceFileProblem(path: string): string | null {
  const host = fileSystem();
  if (host === null) return NO_FILE_SYSTEM;
  const { accessSync, constants, statSync } = host.fs;
  const { dirname, resolve } = host.path;
  const file = resolve(path);
  try {
    const stats = statSync(file, { throwIfNoEntry: false });
    if (stats?.isDirectory()) return `${file} is a directory; expected a file path`;
    if (stats !== undefined) {
      accessSync(file, constants.W_OK);
      return null;
    }
  } catch {
    return `${file} is not writable`;
  }
  const directory = dirname(file);
  const parent = statSync(directory, { throwIfNoEntry: false });
  if (parent === undefined) return `directory ${directory} does not exist`;
  if (!parent.isDirectory()) return `${directory} is not a directory`;
  try {
    accessSync(directory, constants.W_OK);
  } catch {
    return `directory ${directory} is not writable`;
  }
  return null;
}

/** An open trace file: one descriptor for the run, one write per event. */
export class TraceFileWriter {
  private fd: number | null;
  private readonly fs: FileSystem;

  /** Opens (creating or appending to) `path`; throws when it cannot be opened. */
  constructor(readonly path: string) {
    const host = fileSystem();
    if (host === null) throw new Error(`trace.file: ${NO_FILE_SYSTEM}`);
    this.fs = host.fs;
    this.fd = this.fs.openSync(path, 'a');
  }

  write(event: TraceEvent): void {
    if (this.fd === null) return;
    // One write of the whole line: a kill can cut only the line being written, never interleave two.
    this.fs.writeSync(this.fd, `${JSON.stringify(event)}\n`);
  }

  close(): void {
    if (this.fd === null) return;
    const fd = this.fd;
    this.fd = null;
    this.fs.closeSync(fd);
  }
}
