import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LoopConfigError } from '../../contracts/errors.js';
import { openaiModel, type OpenAIModelOptions } from './openai-model.js';

const savedKey = process.env.OPENAI_API_KEY;
const savedBaseURL = process.env.OPENAI_BASE_URL;
beforeEach(() => {
  delete process.env.OPENAI_API_KEY;
  delete process.env.OPENAI_BASE_URL;
});
afterEach(() => {
  if (savedKey === undefined) delete process.env.OPENAI_API_KEY;
  else process.env.OPENAI_API_KEY = savedKey;
  if (savedBaseURL === undefined) delete process.env.OPENAI_BASE_URL;
  else process.env.OPENAI_BASE_URL = savedBaseURL;
});

function issuesOf(options: unknown): { path: string; message: string }[] {
  try {
    openaiModel(options as OpenAIModelOptions);
  } catch (error) {
    expect(error).toBeInstanceOf(LoopConfigError);
    return [...(error as LoopConfigError).issues];
  }
  throw new Error('expected a LoopConfigError');
}

describe('openaiModel options', () => {
  it('without a key for OpenAI: a LoopConfigError that names OPENAI_API_KEY', () => {
    expect(issuesOf({ model: 'gpt-4.1-mini' })).toEqual([
      {
        path: 'openaiModel.apiKey',
        message: 'no API key for https://api.openai.com/v1: pass apiKey or set the OPENAI_API_KEY environment variable',
      },
    ]);
  });

  it('takes the key from OPENAI_API_KEY, and needs none for a local server', () => {
    process.env.OPENAI_API_KEY = 'sk-from-env';
    expect(openaiModel({ model: 'gpt-4.1-mini' }).id).toBe('gpt-4.1-mini');
    delete process.env.OPENAI_API_KEY;
    expect(openaiModel({ model: 'llama3.1:8b', baseURL: 'http://127.0.0.1:11434/v1' }).id).toBe('llama3.1:8b');
    process.env.OPENAI_BASE_URL = 'http://localhost:8000/v1';
    expect(openaiModel({ model: 'qwen' }).id).toBe('qwen');
  });

  it("never sends OPENAI_API_KEY to a baseURL given in code that is not OpenAI's", async () => {
    process.env.OPENAI_API_KEY = 'sk-real-openai-key';
    const seen: (string | null)[] = [];
    const { createServer } = await import('node:http');
    const server = createServer((request, response) => {
      seen.push(request.headers.authorization ?? null);
      response.writeHead(200, { 'content-type': 'application/json' });
      response.end(
        JSON.stringify({
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: 'ok' } }],
          usage: { prompt_tokens: 1, completion_tokens: 1 },
        }),
      );
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = server.address() as { port: number };
      const request = {
        messages: [{ role: 'user' as const, content: 'hi' }],
        tools: [],
        signal: new AbortController().signal,
      };
      await openaiModel({ model: 'local', baseURL: `http://127.0.0.1:${port}/v1` }).generate(request);
      await openaiModel({ model: 'local', baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'local-key' }).generate(
        request,
      );
      process.env.OPENAI_BASE_URL = `http://127.0.0.1:${port}/v1`;
      await openaiModel({ model: 'local' }).generate(request);
      expect(seen).toEqual(['Bearer no-key', 'Bearer local-key', 'Bearer sk-real-openai-key']);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it('refuses a baseURL with user:password@, which fetch would refuse on every call', () => {
    expect(issuesOf({ model: 'x', baseURL: 'http://me:secret@127.0.0.1:8000/v1' })).toEqual([
      {
        path: 'openaiModel.baseURL',
        message: 'must not carry user:password@ (fetch refuses it); send credentials with `headers` or `apiKey`',
      },
    ]);
  });

  it('names OPENAI_BASE_URL when it is not a URL', () => {
    process.env.OPENAI_BASE_URL = 'localhost:11434';
    expect(issuesOf({ model: 'x' })).toEqual([
      {
        path: 'openaiModel.baseURL',
        message:
          'from the OPENAI_BASE_URL environment variable: expected an http(s) URL, e.g. "http://127.0.0.1:11434/v1"; fix it or pass baseURL',
      },
    ]);
  });

  it('names each bad field', () => {
    const issues = issuesOf({
      model: '',
      api: 'completions',
      timeoutMs: 0,
      idleTimeoutMs: 1.5,
      stream: 'yes',
      baseURL: 'ftp://x',
      settings: { temperature: 9, maxTokens: 3 },
    });
    expect(issues.map((issue) => issue.path).sort()).toEqual([
      'openaiModel.api',
      'openaiModel.baseURL',
      'openaiModel.idleTimeoutMs',
      'openaiModel.model',
      'openaiModel.settings.maxTokens',
      'openaiModel.settings.temperature',
      'openaiModel.stream',
      'openaiModel.timeoutMs',
    ]);
    expect(issuesOf({ model: 'x', apiKey: 'k', timeout: 5 })).toEqual([
      { path: 'openaiModel.timeout', message: 'unknown option' },
    ]);
  });

  it('names a bad maxResponseBytes or redirects', () => {
    for (const maxResponseBytes of [0, -1, 1.5, '16MB', Number.POSITIVE_INFINITY]) {
      expect(issuesOf({ model: 'x', apiKey: 'k', maxResponseBytes }).map((issue) => issue.path)).toEqual([
        'openaiModel.maxResponseBytes',
      ]);
    }
    expect(issuesOf({ model: 'x', apiKey: 'k', redirects: 'follow' })).toEqual([
      { path: 'openaiModel.redirects', message: "expected 'refuse' or 'same-origin'" },
    ]);
  });

  it('takes undefined as the default for every option', () => {
    const model = openaiModel({
      model: 'gpt-4.1-mini',
      apiKey: 'sk-x',
      baseURL: undefined,
      api: undefined,
      timeoutMs: undefined,
      idleTimeoutMs: undefined,
      stream: undefined,
      settings: { temperature: undefined },
      headers: undefined,
      structuredOutput: undefined,
      organization: undefined,
      contextWindowTokens: undefined,
      maxResponseBytes: undefined,
      redirects: undefined,
    });
    expect(model.id).toBe('gpt-4.1-mini');
    expect(model.contextWindowTokens).toBeUndefined();
    expect(
      openaiModel({ model: 'gpt-4.1-mini', apiKey: 'sk-x', contextWindowTokens: 128_000 }).contextWindowTokens,
    ).toBe(128_000);
  });

  it('keeps the key out of the model object and its messages', () => {
    const key = 'sk-proj-supersecretvalue123';
    const model = openaiModel({ model: 'gpt-4.1-mini', apiKey: key });
    expect(JSON.stringify(model)).not.toContain(key);
    expect(Object.values(model).map(String).join(' ')).not.toContain(key);
  });
});
