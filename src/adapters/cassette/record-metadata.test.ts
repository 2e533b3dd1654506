/**
 * A cassette keeps what the recorded model said about itself (provider, server, settings) and about each
 * reply (response id, answering model, finish reason): the replayed run is traced, warned about and
 * exported exactly as the recorded one.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createLoop, evaluators, type Model, type RunResult } from '../../index.js';
import { reply, scriptedModel, virtualClock } from '../../testing/index.js';
import { recordModel } from './record-model.js';
import { replayModel } from './replay-model.js';

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(join(tmpdir(), 'loopstate-cassette-metadata-'));
});
afterEach(() => rmSync(folder, { recursive: true, force: true }));

const run = (model: Model): Promise<RunResult> =>
  createLoop({
    model,
    clock: virtualClock(),
    evaluate: evaluators.rule((output) => output === 'Done.', 'not done yet'),
  }).run({ goal: 'Finish', runId: 'run' });

describe('cassette response metadata and model facts', () => {
  it('are recorded and replayed: the same warnings and step-end metadata, the same provider and server', async () => {
    const path = join(folder, 'metadata.json');
    const live = scriptedModel(
      [
        reply('Don', { metadata: { id: 'chatcmpl-1', model: 'gpt-4.1-mini-2025-04-14', finishReason: 'length' } }),
        reply('Done.', { metadata: { id: 'chatcmpl-2', finishReason: 'stop' } }),
      ],
      {
        id: 'gpt-4.1-mini',
        provider: 'openai',
        server: { address: 'api.openai.com', port: 443 },
        settings: { maxOutputTokens: 3, temperature: 0 },
      },
    );
    const recorder = recordModel(live, path);
    expect(recorder).toMatchObject({ provider: 'openai', server: { address: 'api.openai.com', port: 443 } });
    const recorded = await run(recorder);
    recorder.close();
    expect(recorded.warnings).toContain(
      'model call 1 (task main) was cut at the output limit (finish reason length; maxOutputTokens 3): the reply may be incomplete',
    );
    const file = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
    expect(file).toMatchObject({ provider: 'openai', settings: { maxOutputTokens: 3, temperature: 0 } });

    const replay = replayModel(path);
    expect([replay.provider, replay.server, replay.settings]).toEqual([
      'openai',
      { address: 'api.openai.com', port: 443 },
      { maxOutputTokens: 3, temperature: 0 },
    ]);
    const replayed = await run(replay);
    replay.assertComplete();
    expect(replayed.warnings).toEqual(recorded.warnings);
    const metadataOf = (result: RunResult) =>
      result.trace.flatMap((event) => (event.type === 'step-end' ? [event.metadata] : []));
    expect(metadataOf(replayed)).toEqual([
      { id: 'chatcmpl-1', model: 'gpt-4.1-mini-2025-04-14', finishReason: 'length' },
      { id: 'chatcmpl-2', finishReason: 'stop' },
    ]);
    expect(metadataOf(replayed)).toEqual(metadataOf(recorded));
  });
});
