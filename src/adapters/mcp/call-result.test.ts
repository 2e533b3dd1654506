import { describe, expect, it } from 'vitest';
import { describeBlock, formatSize, toolResultValue } from './call-result.js';

describe('toolResultValue', () => {
  it('joins text parts and passes structured content as the value', () => {
    expect(
      toolResultValue(
        {
          content: [
            { type: 'text', text: 'a' },
            { type: 'text', text: 'b' },
          ],
        },
        't',
        [],
      ),
    ).toBe('a\nb');
    expect(
      toolResultValue({ content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } }, 't', []),
    ).toEqual({ n: 1 });
  });

  it('throws a ToolCallError with the server message for isError, blaming the tool', () => {
    expect(() =>
      toolResultValue({ content: [{ type: 'text', text: 'disk full' }], isError: true }, 'save', []),
    ).toThrow(
      expect.objectContaining({
        code: 'tool_call_failed',
        toolCode: 'mcp_tool_error',
        blame: 'tool',
        message: 'disk full',
      }),
    );
    expect(() => toolResultValue({ content: [], isError: true }, 'save', [])).toThrow(
      /save reported an error without a message/,
    );
  });

  it('scrubs the secrets from text, structured content (keys too) and error messages', () => {
    const secrets = ['tok_0123456789'];
    expect(toolResultValue({ content: [{ type: 'text', text: 'key tok_0123456789' }] }, 't', secrets)).toBe(
      'key [redacted]',
    );
    expect(toolResultValue({ structuredContent: { tok_0123456789: ['tok_0123456789'] } }, 't', secrets)).toEqual({
      '[redacted]': ['[redacted]'],
    });
    expect(() =>
      toolResultValue({ content: [{ type: 'text', text: 'bad tok_0123456789' }], isError: true }, 't', secrets),
    ).toThrow('bad [redacted]');
  });
});

describe('describeBlock', () => {
  it('summarises images, audio and resources by type, MIME type and size, never their bytes', () => {
    const data = Buffer.alloc(3000).toString('base64');
    expect(describeBlock({ type: 'image', data, mimeType: 'image/png' })).toBe('[image image/png, 3 KB]');
    expect(describeBlock({ type: 'audio', data: 'AAAA', mimeType: 'audio/wav' })).toBe('[audio audio/wav, 3 B]');
    expect(describeBlock({ type: 'resource_link', uri: 'file:///a.txt', name: 'a', mimeType: 'text/plain' })).toBe(
      '[resource link file:///a.txt (a), text/plain]',
    );
    expect(describeBlock({ type: 'resource', resource: { uri: 'file:///b.bin', blob: data } })).toBe(
      '[resource file:///b.bin, 3 KB]',
    );
    expect(describeBlock({ type: 'hologram' })).toBe('[hologram content]');
  });

  it('formats sizes', () => {
    expect([formatSize(0), formatSize(1023), formatSize(12_288), formatSize(3 * 1024 * 1024)]).toEqual([
      '0 B',
      '1023 B',
      '12 KB',
      '3.0 MB',
    ]);
  });
});
