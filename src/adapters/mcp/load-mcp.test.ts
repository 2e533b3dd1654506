import { describe, expect, it } from 'vitest';
import { MissingDependencyError } from '../../contracts/errors.js';
import { loadMcpSdk } from './load-mcp.js';

describe('loadMcpSdk', () => {
  it('loads the client, the three transports and the list-changed schema', async () => {
    const sdk = await loadMcpSdk();
    expect([sdk.Client, sdk.StdioClientTransport, sdk.StreamableHTTPClientTransport, sdk.SSEClientTransport]).toEqual(
      Array(4).fill(expect.any(Function)),
    );
    expect(sdk.ToolListChangedNotificationSchema).toBeDefined();
  });

  it('turns a missing package into missing_dependency naming the install command', async () => {
    const notInstalled = (specifier: string) =>
      Promise.reject(
        Object.assign(
          new Error(`Cannot find package '@modelcontextprotocol/sdk' imported from /app/x.js (${specifier})`),
          {
            code: 'ERR_MODULE_NOT_FOUND',
          },
        ),
      );
    const failed = loadMcpSdk(notInstalled);
    await expect(failed).rejects.toBeInstanceOf(MissingDependencyError);
    await expect(failed).rejects.toMatchObject({
      code: 'missing_dependency',
      installCommand: 'npm install @modelcontextprotocol/sdk',
    });
  });
});
